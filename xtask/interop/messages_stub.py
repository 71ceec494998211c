"""A local stand-in for the Anthropic Messages API, for `cargo xtask interop`'s agent turn.

Usage: messages_stub.py TOOL CODE LOG

Serves `POST /v1/messages` on 127.0.0.1 (a free port, printed as `PORT <n>` on stdout) for
Claude Code in print mode (`ANTHROPIC_BASE_URL=http://127.0.0.1:<n>`). It plays a scripted
model, not a model:

- a request that offers the tool TOOL (`tools[].name`) and has no `tool_result` yet is answered
  with one `tool_use` of TOOL whose input is `{"code": CODE}` (stop reason `tool_use`);
- a request that carries the `tool_result` of that `tool_use` is answered with the final text
  `codemode answered: <the tool result's text>`;
- any other request (Claude Code's side requests, e.g. a title or a quota probe) gets the text
  `ok`.

Streaming requests (`"stream": true`, what Claude Code sends) get the Messages API's
server-sent events `message_start`, `content_block_start`, `content_block_delta`,
`content_block_stop`, `message_delta`, `message_stop`; others get the JSON message. Every
request's JSON body is appended to LOG (one line each), so the caller can check what Claude
Code sent, including the `tool_result` it recorded.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOOL, CODE, LOG = sys.argv[1], sys.argv[2], sys.argv[3]
TOOL_USE_ID = "toolu_interop_1"


def tool_result_text(messages):
    """The text of the `tool_result` answering TOOL_USE_ID in `messages`, or None."""
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "tool_result" and block.get("tool_use_id") == TOOL_USE_ID:
                inner = block.get("content")
                if isinstance(inner, str):
                    return inner
                return "".join(part.get("text", "") for part in inner or [] if isinstance(part, dict))
    return None


def reply_for(body):
    """The content blocks and stop reason the scripted model answers `body` with."""
    offered = any(tool.get("name") == TOOL for tool in body.get("tools") or [])
    result = tool_result_text(body.get("messages") or [])
    if result is not None:
        return [{"type": "text", "text": "codemode answered: " + result}], "end_turn"
    if offered:
        use = {"type": "tool_use", "id": TOOL_USE_ID, "name": TOOL, "input": {"code": CODE}}
        return [use], "tool_use"
    return [{"type": "text", "text": "ok"}], "end_turn"


def message(body, content, stop):
    return {
        "id": "msg_interop",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "stand-in"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 10},
    }


def events(body, content, stop):
    """The server-sent events of one streamed message."""
    start = message(body, [], None)
    start["usage"] = {"input_tokens": 10, "output_tokens": 1}
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(content):
        if block["type"] == "text":
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {"type": "text", "text": ""}}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            opening = dict(block, input={})
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": opening}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": stop, "stop_sequence": None},
                            "usage": {"output_tokens": 10}}
    yield "message_stop", {"type": "message_stop"}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self.send_error(400, "body is not JSON")
            return
        with open(LOG, "a", encoding="utf-8") as log:
            log.write(json.dumps({"path": self.path, "body": body}) + "\n")
        if not self.path.startswith("/v1/messages") or self.path.startswith("/v1/messages/count_tokens"):
            payload = json.dumps({"input_tokens": 10}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        content, stop = reply_for(body)
        if body.get("stream"):
            chunks = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n"
                             for name, data in events(body, content, stop)).encode()
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
        else:
            chunks = json.dumps(message(body, content, stop)).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(chunks)))
        self.end_headers()
        self.wfile.write(chunks)

    def do_GET(self):
        payload = b"{}"
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
sys.stdout.write(f"PORT {server.server_address[1]}\n")
sys.stdout.flush()
server.serve_forever()
