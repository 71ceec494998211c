// codemode guest prelude (docs/guest-abi.md, "Prelude").
//
// Evaluated once per VM image, before any user code. It is a function expression: the guest calls
// it with `native` ({request, output}, native functions that reach the host outbox) and keeps the
// returned internals object out of every user-visible scope. Nothing here is reachable from user
// code except the globals `setup` installs. Intrinsics are captured up front so user code that
// replaces `JSON`, `Promise`, `Object` or `Error` cannot subvert the bridge.
(function (native) {
  "use strict";
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const freeze = Object.freeze;
  const create = Object.create;
  const defineProperty = Object.defineProperty;
  const keys = Object.keys;
  const isArray = Array.isArray;
  const PromiseCtor = Promise;
  const reject = (e) => new PromiseCtor((_, rej) => rej(e));
  const ErrorCtor = Error;
  const StringCtor = String;
  const requestNative = native.request;
  const outputNative = native.output;
  const safeName = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
  const reserved = create(null);
  reserved.search = reserved.describe = reserved.call = reserved.callValue = true;

  // Pending bridge requests: id -> {resolve, reject}. A null-prototype object, not a Map, so that
  // user code patching Map.prototype cannot reach it.
  const pending = create(null);
  let outstanding = 0;

  // The JSON adapter (docs/contract/json.md#s6): undefined -> null; otherwise a JSON round trip; when
  // stringifying throws, Errors become {name, message} and everything else String(v).
  function safe(v) {
    if (v === undefined) return null;
    // Fast paths with the same result as the round trip.
    const type = typeof v;
    if (type === "string" || type === "boolean" || v === null) return v;
    if (type === "number") return v - v === 0 ? v : null;
    let s;
    try {
      s = stringify(v);
    } catch (e) {
      if (v instanceof ErrorCtor) {
        try {
          return { name: StringCtor(v.name), message: StringCtor(v.message) };
        } catch (_) {
          return { name: "Error", message: "" };
        }
      }
      if (v === null || (typeof v !== "object" && typeof v !== "function" && typeof v !== "bigint")) return v;
      try {
        return StringCtor(v);
      } catch (_) {
        return null;
      }
    }
    if (s === undefined) {
      if (typeof v === "function") {
        try {
          return StringCtor(v);
        } catch (_) {
          return null;
        }
      }
      return null;
    }
    return parse(s);
  }

  // JSON text of the adapted value with lone-surrogate escapes (`\ud800`, which well-formed
  // JSON.stringify emits only for lone surrogates) replaced by `\ufffd`, so the host always gets
  // valid UTF-8 JSON.
  const loneSurrogate = /(\\+)(ud[89a-f][0-9a-f]{2})/g;
  const replace = String.prototype.replace;
  const indexOf = String.prototype.indexOf;
  const slice = String.prototype.slice;
  function jsonText(v) {
    const text = stringify(safe(v));
    if (indexOf.call(text, "\\ud") === -1) return text;
    return replace.call(text, loneSurrogate, (m, bs, u) => (bs.length % 2 === 1 ? bs + "ufffd" : m));
  }

  // Bridge envelopes are built as text, so user `toJSON` on Object.prototype cannot rewrite them.
  // `fields` is a list of [key, value] pairs; each value goes through the JSON adapter.
  function envelope(fields) {
    let out = "{";
    for (let i = 0; i < fields.length; i++) {
      if (i > 0) out += ",";
      out += stringify(fields[i][0]) + ":" + jsonText(fields[i][1]);
    }
    return out + "}";
  }

  function request(method, fields) {
    const payload = envelope(fields);
    const id = requestNative(method, payload);
    return new PromiseCtor((resolve, rej) => {
      pending[id] = { resolve, reject: rej };
      outstanding++;
    });
  }

  function deliver(id, ok, payload) {
    const entry = pending[id];
    if (entry === undefined) return false;
    delete pending[id];
    outstanding--;
    if (ok) {
      // The host sends valid JSON, so parsing fails only when the heap is full: the awaiting
      // code gets that catchable error (docs/contract/lifecycle.md#s5-7), not a silent null.
      let value;
      try {
        value = parse(payload);
      } catch (e) {
        entry.reject(e);
        return true;
      }
      entry.resolve(value);
    } else {
      entry.reject(new ErrorCtor(StringCtor(payload)));
    }
    return true;
  }

  function text(value) {
    const t = typeof value === "string" ? value : stringify(safe(value));
    outputNative(envelope([["type", "text"], ["text", t]]));
  }

  function json(value) {
    outputNative(envelope([["type", "json"], ["value", value]]));
  }

  // Error texts are cut to this many UTF-16 units (a guest could throw a 30 MB message), and made
  // well-formed so they convert to host UTF-8.
  const MAX_ERROR_CHARS = 16384;
  const toWellFormed = String.prototype.toWellFormed;
  function clip(text) {
    let out = text;
    if (out.length > MAX_ERROR_CHARS) out = slice.call(out, 0, MAX_ERROR_CHARS) + " … (truncated)";
    return toWellFormed.call(out);
  }

  // "<Name>: <message>" plus QuickJS backtrace frames (docs/contract/lifecycle.md#s5-8). Never starts with "at ".
  function formatError(e) {
    return clip(formatErrorText(e));
  }

  function formatErrorText(e) {
    try {
      if (e !== null && typeof e === "object" && (e instanceof ErrorCtor || typeof e.message === "string")) {
        let name = "Error";
        try {
          if (typeof e.name === "string" && e.name !== "") name = e.name;
        } catch (_) {}
        let message = "";
        try {
          message = StringCtor(e.message);
        } catch (_) {}
        let out = name + ": " + message;
        let stack = "";
        try {
          if (typeof e.stack === "string") stack = e.stack;
        } catch (_) {}
        const frames = [];
        const lines = stack.split("\n");
        for (let i = 0; i < lines.length; i++) {
          const line = lines[i].trim();
          // Bridge internals are not the user's frames (script name set by the guest).
          if (line !== "" && line.indexOf("codemode:prelude.js") === -1) frames.push("    " + line);
        }
        if (frames.length > 0) out += "\n" + frames.join("\n");
        return out;
      }
      return "Uncaught " + stringify(safe(e));
    } catch (_) {
      return "Error: (unprintable exception)";
    }
  }

  function finish(value) {
    return jsonText(value);
  }

  function entryId(id, what) {
    if (typeof id !== "string") throw new ErrorCtor(what + " id must be a string.");
    return id;
  }

  function deepFreeze(v) {
    if (v !== null && typeof v === "object") {
      const ks = keys(v);
      for (let i = 0; i < ks.length; i++) deepFreeze(v[ks[i]]);
      freeze(v);
    }
    return v;
  }

  function define(name, value) {
    defineProperty(globalThis, name, { value, writable: false, enumerable: false, configurable: false });
  }

  // Math.random for this run: xoshiro128** seeded with four host-random 32-bit words, 53 bits
  // per number. Every VM starts from one post-initialisation image, so QuickJS's own seed (taken
  // once, when the image was made) would give every run the same sequence.
  function seedRandom(seed) {
    let a = seed[0] | 0, b = seed[1] | 0, c = seed[2] | 0, d = seed[3] | 0;
    if ((a | b | c | d) === 0) a = 1;
    const imul = Math.imul;
    function next() {
      const t = b << 9;
      let r = imul(b, 5);
      r = imul((r << 7) | (r >>> 25), 9);
      c ^= a;
      d ^= b;
      b ^= c;
      a ^= d;
      c ^= t;
      d = (d << 11) | (d >>> 21);
      return r >>> 0;
    }
    const random = {
      random() {
        return ((next() >>> 5) * 67108864 + (next() >>> 6)) / 9007199254740992;
      },
    }.random;
    defineProperty(Math, "random", { value: random, writable: true, enumerable: false, configurable: true });
  }

  // The read-only `API` virtual files (docs/contract/mcp.md#s7-4): [{path, description, bytes, content}].
  function makeApi(files) {
    const list = function list(prefix) {
      return new PromiseCtor((resolve) => {
        let p = typeof prefix === "string" ? prefix.trim() : "";
        while (p.endsWith("/")) p = p.slice(0, -1);
        const out = [];
        for (let i = 0; i < files.length; i++) {
          const f = files[i];
          if (p === "" || f.path === p || f.path.startsWith(p + "/")) {
            out.push({ path: f.path, description: f.description, bytes: f.bytes });
          }
        }
        resolve({ files: out });
      });
    };
    const read = function read(path) {
      return new PromiseCtor((resolve, rej) => {
        let p = typeof path === "string" ? path : "";
        if (p.startsWith("/")) p = p.slice(1);
        const segments = p.split("/");
        if (p === "" || segments.some((s) => s === "" || s === "." || s === "..")) {
          rej(new ErrorCtor("invalid API file path"));
          return;
        }
        for (let i = 0; i < files.length; i++) {
          const f = files[i];
          if (f.path === p) {
            resolve({ path: f.path, content: f.content, description: f.description, bytes: f.bytes });
            return;
          }
        }
        rej(new ErrorCtor("Unknown API file: " + p));
      });
    };
    return freeze({ list, read });
  }

  // The `MCP` namespace (docs/contract/mcp.md#s7): frozen null-prototype scopes whose leaves issue
  // `namespace` requests with the path below `MCP` and the argument list (trailing `undefined`s
  // dropped). `mcp` is {paths: [[segment, ...]], serverNames: [[identifier, serverName]]}.
  function namespaceCall(path) {
    return function (...args) {
      let count = args.length;
      while (count > 0 && args[count - 1] === undefined) count--;
      // Each argument goes through the JSON adapter on its own, so an argument that cannot be
      // stringified (a cycle, a BigInt) becomes its String() and fails the host's one-object
      // check, instead of turning the whole list into one string.
      const adapted = [];
      for (let i = 0; i < count; i++) {
        defineProperty(adapted, i, { value: safe(args[i]), enumerable: true, writable: true, configurable: true });
      }
      return request("namespace", [
        ["namespace", "mcp"],
        ["path", path],
        ["args", adapted],
      ]);
    };
  }

  function freezeDeep(scope) {
    const ks = keys(scope);
    for (let i = 0; i < ks.length; i++) {
      const v = scope[ks[i]];
      if (v !== null && typeof v === "object") freezeDeep(v);
    }
    return freeze(scope);
  }

  function makeMcp(mcp) {
    const paths = mcp !== null && typeof mcp === "object" && isArray(mcp.paths) ? mcp.paths : [];
    if (paths.length === 0) return undefined;
    const root = create(null);
    const names = isArray(mcp.serverNames) ? mcp.serverNames : [];
    for (let i = 0; i < names.length; i++) {
      const scope = create(null);
      defineProperty(scope, "$serverName", { value: names[i][1], enumerable: true });
      defineProperty(root, names[i][0], { value: scope, enumerable: true });
    }
    for (let i = 0; i < paths.length; i++) {
      const path = paths[i];
      let target = root;
      for (let j = 0; j < path.length - 1; j++) {
        let next = target[path[j]];
        if (next === undefined) {
          next = create(null);
          defineProperty(target, path[j], { value: next, enumerable: true });
        }
        target = next;
      }
      defineProperty(target, path[path.length - 1], { value: namespaceCall(path), enumerable: true });
    }
    return freezeDeep(root);
  }

  function yieldControl(reason) {
    // Resolves with the bridge value {status: "yielded", reason} (docs/contract/lifecycle.md#s5-10).
    return request("yield", [["reason", reason === undefined ? null : reason]]);
  }

  // Installs the run's globals from the host's run context:
  // {tools: [compact catalog entries], apiFiles: [{path, description, bytes, content}]}.
  function setup(contextJson, seed) {
    seedRandom(seed);
    const context = parse(contextJson);
    const apiFiles = isArray(context.apiFiles) ? context.apiFiles : [];
    const entries = isArray(context.tools) ? context.tools : [];
    const allTools = deepFreeze(entries);
    const api = create(null);
    api.search = function search(query, options) {
      const limit = options !== null && typeof options === "object" ? options.limit : undefined;
      const fields = [["query", query === undefined ? null : query]];
      if (limit !== undefined) fields.push(["limit", limit]);
      return request("search", fields);
    };
    api.describe = function describe(id) {
      try {
        return request("describe", [["id", entryId(id, "describe")]]);
      } catch (e) {
        return reject(e);
      }
    };
    api.call = function call(id, input) {
      try {
        return request("call", [["id", entryId(id, "call")], ["input", input === undefined ? {} : input]]);
      } catch (e) {
        return reject(e);
      }
    };
    api.callValue = function callValue(id, input) {
      try {
        return request("callValue", [
          ["id", entryId(id, "callValue")],
          ["input", input === undefined ? {} : input],
        ]);
      } catch (e) {
        return reject(e);
      }
    };
    // Convenience functions for unambiguous safe names (docs/contract/catalog.md#s3-4).
    const counts = create(null);
    for (let i = 0; i < allTools.length; i++) {
      const name = allTools[i].name;
      counts[name] = (counts[name] || 0) + 1;
    }
    for (let i = 0; i < allTools.length; i++) {
      const entry = allTools[i];
      const name = entry.name;
      if (typeof name !== "string" || !safeName.test(name) || reserved[name] || counts[name] !== 1) continue;
      const id = entry.id;
      api[name] = function (input) {
        return api.callValue(id, input);
      };
    }
    // defineProperty, not assignment: a tool named "__proto__" must not replace the prototype.
    const toolsObject = {};
    const names = keys(api);
    for (let i = 0; i < names.length; i++) {
      defineProperty(toolsObject, names[i], { value: api[names[i]], writable: false, enumerable: true, configurable: false });
    }
    define("ALL_TOOLS", allTools);
    define("tools", freeze(toolsObject));
    define("text", text);
    define("json", json);
    define("yield_control", yieldControl);
    define("API", makeApi(apiFiles));
    const namespaces = create(null);
    const mcp = makeMcp(context.mcp);
    if (mcp !== undefined) {
      namespaces.MCP = mcp;
      define("MCP", mcp);
    }
    define("namespaces", freeze(namespaces));
  }

  return freeze({
    setup,
    deliver,
    finish,
    formatError,
    outstanding: () => outstanding,
  });
});
