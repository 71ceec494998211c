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
  // Brand checks from the engine (JS_PromiseState / JS_IsError): unlike `instanceof` they cannot be
  // redirected by user code (Symbol.hasInstance, prototype swaps).
  const isPromise = native.isPromise;
  const isError = native.isError;
  // Nesting depth of a JSON text, and the count of allocations the heap limit refused so far.
  const jsonDepth = native.jsonDepth;
  const refusedAllocations = native.refusedAllocations;
  // The run context (docs/guest-abi.md, "Run context"): `context(section)` copies one section in
  // from the host and parses it; `convenience(name)` asks the host for the id behind
  // `tools.<name>` (undefined: none).
  const contextSection = native.context;
  const convenienceId = native.convenience;
  const SECTION_TOOLS = 0;
  const SECTION_API_FILES = 1;
  const SECTION_MCP = 2;
  const SECTION_CONVENIENCES = 3;
  const ProxyCtor = Proxy;
  const RangeErrorCtor = RangeError;
  const apply = Reflect.apply;
  const WeakMapCtor = WeakMap;
  const weakGet = WeakMap.prototype.get;
  const weakSet = WeakMap.prototype.set;
  const stringTrim = String.prototype.trim;
  const charCodeAt = String.prototype.charCodeAt;
  const stringEndsWith = String.prototype.endsWith;
  const stringStartsWith = String.prototype.startsWith;
  const stringLastIndexOf = String.prototype.lastIndexOf;
  const arrayJoin = Array.prototype.join;
  const getPrototypeOf = Object.getPrototypeOf;
  const numberParse = Number.parseInt;
  const safeName = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
  const reserved = create(null);
  reserved.search = reserved.describe = reserved.call = reserved.callValue = true;
  const PRELUDE_FILE = "codemode:prelude.js";
  const hasOwn = Object.hasOwn;
  // `Math` is one of QuickJS's lazily made globals: the first read of it makes the object and
  // all its functions. Read here, at pre-initialisation, it is made once, in the image; read
  // first in `setup` (seedRandom), every run made it again (7% of a trivial exec's samples,
  // docs/benchmarks.md "Guest CPU").
  const MathObj = Math;
  const imul = MathObj.imul;
  const isExtensible = Object.isExtensible;

  // A data property descriptor for `defineProperty`. Null-prototype: the engine reads `get`,
  // `set`, `value`, `writable`, `enumerable` and `configurable` of a descriptor with HasProperty,
  // so a descriptor written as an ordinary literal would inherit a program's
  // `Object.prototype.get = undefined` and become an invalid accessor-plus-value descriptor
  // (docs/guest-abi.md, "Threat model: the guest layer").
  function data(value, writable, enumerable, configurable) {
    return { __proto__: null, value, writable, enumerable, configurable };
  }

  // Settles a promise through its `resolve` function with `value` as it is. A resolve function
  // reads `value.then` and calls it when it is a function, so a program's
  // `Object.prototype.then` would otherwise receive, and could replace, every object the bridge
  // hands out. An object with no own `then` gets an own `then: undefined` for the duration of
  // the call (it runs no user code: the data property is read, not called) and loses it right
  // after. A non-extensible object is settled as it is, so the bridge freezes its own values
  // after settling them (`request`'s `seal`).
  const THEN_SHADOW = data(undefined, true, false, true);
  function settle(resolve, value) {
    if (value === null || typeof value !== "object" || hasOwn(value, "then") || !isExtensible(value)) {
      resolve(value);
      return;
    }
    defineProperty(value, "then", THEN_SHADOW);
    try {
      resolve(value);
    } finally {
      delete value.then;
    }
  }

  // `object[key]` when it is an own property, else undefined: host values read this way never
  // pick up a key a program put on Object.prototype.
  function own(object, key) {
    return object !== null && typeof object === "object" && hasOwn(object, key) ? object[key] : undefined;
  }

  // Stack walking never hands out a bridge function (docs/contract/guest.md#s4-2): with
  // `Error.prepareStackTrace` set, QuickJS passes CallSite objects whose `getFunction()`
  // returns the function of every frame, the prelude's own included. It is replaced on the
  // CallSite prototype (reached once, here, through a temporary prepareStackTrace) by one that
  // answers `undefined` for frames of this script and for native frames (the `native` functions,
  // built-ins), as V8 does for strict-mode frames; the user's own functions are still returned.
  (function hideBridgeFrames() {
    let proto;
    Error.prepareStackTrace = (_e, sites) => {
      proto = sites.length > 0 ? getPrototypeOf(sites[0]) : undefined;
      return "";
    };
    try {
      new ErrorCtor().stack;
    } finally {
      Error.prepareStackTrace = undefined;
    }
    if (proto === undefined || typeof proto.getFunction !== "function") return;
    const getFunction = proto.getFunction;
    const getFileName = proto.getFileName;
    const isNative = proto.isNative;
    const guarded = {
      getFunction() {
        if (apply(isNative, this, []) || apply(getFileName, this, []) === PRELUDE_FILE) return undefined;
        return apply(getFunction, this, []);
      },
    }.getFunction;
    defineProperty(proto, "getFunction", data(guarded, false, false, false));
  })();

  // Pending bridge requests: id -> {resolve, reject}. A null-prototype object, not a Map, so that
  // user code patching Map.prototype cannot reach it.
  const pending = create(null);
  let outstanding = 0;

  // Appends `value` to the prelude's own array `list` with defineProperty, so setters a user put on
  // Array.prototype (or a replaced `push`) never see or change bridge data.
  function append(list, value) {
    defineProperty(list, list.length, data(value, true, true, true));
  }

  // D14 (docs/contract/decisions.md#d14): what an unawaited Promise becomes inside a value.
  const UNAWAITED_PROMISE =
    "[Unawaited Promise: use await or Promise.all(...) before emitting or returning values.]";

  // {name, message} plus the Error's own enumerable properties (D14). Getters that throw give the
  // defaults; the object is built with defineProperty so Object.prototype setters are not called.
  function errorObject(e) {
    // Null-prototype: only JSON.stringify reads it (after the replacer, so no inherited toJSON).
    const out = create(null);
    let name = "Error";
    let message = "";
    try {
      name = StringCtor(e.name);
    } catch (_) {}
    try {
      message = StringCtor(e.message);
    } catch (_) {}
    defineProperty(out, "name", data(name, true, true, true));
    defineProperty(out, "message", data(message, true, true, true));
    let ks = [];
    try {
      ks = keys(e);
    } catch (_) {}
    for (let i = 0; i < ks.length; i++) {
      const k = ks[i];
      if (k === "name" || k === "message") continue;
      let v;
      try {
        v = e[k];
      } catch (_) {
        continue;
      }
      defineProperty(out, k, data(v, true, true, true));
    }
    return out;
  }

  // The JSON.stringify replacer of `safe`: Promises become the D14 marker, Errors `errorObject`.
  // `seen` maps an Error to its replacement, so an Error that contains itself is a cycle that
  // JSON.stringify reports (and `safe` falls back), not an endless expansion.
  function makeReplacer() {
    let seen;
    return function (_key, value) {
      if (value === null || (typeof value !== "object" && typeof value !== "function")) return value;
      if (isPromise(value)) return UNAWAITED_PROMISE;
      if (isError(value)) {
        if (seen === undefined) seen = new WeakMapCtor();
        let out = apply(weakGet, seen, [value]);
        if (out === undefined) {
          out = errorObject(value);
          apply(weakSet, seen, [value, out]);
        }
        return out;
      }
      return value;
    };
  }

  // Values crossing the bridge nest at most this many arrays and objects deep: the host parses
  // every report with serde_json (128 levels) and puts results inside envelopes of its own (the
  // result object, an MCP message), so a deeper value is refused here with a RangeError naming
  // its depth instead of failing in the host's parser or losing data (docs/guest-abi.md).
  const MAX_JSON_DEPTH = 100;

  // The fallback text of a value JSON.stringify threw on (a cycle, a BigInt, a throwing toJSON
  // or getter): an Error's {name, message}, else the JSON text of String(v). `refused` is the
  // allocation-refusal count before stringifying: once the heap limit refused an allocation the
  // failure is running out of memory, which fails the call instead of changing the value.
  function fallbackText(v, e, refused) {
    if (refusedAllocations() !== refused) throw e;
    if (isError(v)) {
      let name = "Error";
      let message = "";
      try {
        name = StringCtor(v.name);
        message = StringCtor(v.message);
      } catch (e2) {
        if (refusedAllocations() !== refused) throw e2;
        name = "Error";
        message = "";
      }
      return '{"name":' + stringify(name) + ',"message":' + stringify(message) + "}";
    }
    if (typeof v !== "object" && typeof v !== "function" && typeof v !== "bigint") {
      const t = stringify(v);
      return t === undefined ? "null" : t;
    }
    try {
      return stringify(StringCtor(v));
    } catch (e2) {
      if (refusedAllocations() !== refused) throw e2;
      return "null";
    }
  }

  // The JSON adapter (docs/contract/json.md#s6) as text, in one JSON.stringify pass:
  // undefined -> null; Promises and Errors anywhere are replaced first (D14); when stringifying
  // throws, Errors become {name, message} and everything else String(v) (`fallbackText`).
  // Running out of memory is never a fallback: it fails the call (docs/contract/lifecycle.md#s5-7).
  function adaptText(v) {
    if (v === undefined) return "null";
    const type = typeof v;
    if (type === "string" || type === "boolean" || v === null) return stringify(v);
    if (type === "number") return v - v === 0 ? stringify(v) : "null";
    const refused = refusedAllocations();
    let s;
    try {
      s = stringify(v, makeReplacer());
    } catch (e) {
      return fallbackText(v, e, refused);
    }
    if (s !== undefined) return s;
    if (typeof v !== "function") return "null";
    try {
      return stringify(StringCtor(v));
    } catch (e) {
      if (refusedAllocations() !== refused) throw e;
      return "null";
    }
  }

  // `text` checked for the bridge: nested at most MAX_JSON_DEPTH deep (else a RangeError naming
  // the depth), and with lone-surrogate escapes (`\ud800`, which well-formed JSON.stringify
  // emits only for lone surrogates) replaced by `\ufffd`, so the host always gets valid UTF-8
  // JSON. A plain scan, not a RegExp replace: `String.prototype.replace` would call a user's
  // `RegExp.prototype[Symbol.replace]`.
  const indexOf = String.prototype.indexOf;
  const slice = String.prototype.slice;
  const hexDigits = "0123456789abcdef";
  function checkedText(text) {
    // Nesting N levels takes at least 2N characters.
    if (text.length > 2 * MAX_JSON_DEPTH) {
      const depth = jsonDepth(text);
      if (depth > MAX_JSON_DEPTH) {
        throw new RangeErrorCtor(
          "value is nested " + depth + " levels deep; the code mode bridge takes at most " +
            MAX_JSON_DEPTH + " levels of arrays and objects",
        );
      }
    }
    if (apply(indexOf, text, ["\\ud"]) === -1) return text;
    let out = "";
    let last = 0;
    for (let i = 0; i < text.length; i++) {
      if (text[i] !== "\\") continue;
      // Inside JSON text a backslash always starts an escape: `\uXXXX` or a two-character one.
      if (text[i + 1] === "u" && text[i + 2] === "d" && apply(indexOf, "89abcdef", [text[i + 3]]) !== -1 &&
          apply(indexOf, hexDigits, [text[i + 4]]) !== -1 && apply(indexOf, hexDigits, [text[i + 5]]) !== -1) {
        out += apply(slice, text, [last, i]) + "\\ufffd";
        last = i + 6;
        i += 5;
      } else {
        i += 1;
      }
    }
    return out + apply(slice, text, [last]);
  }

  // The bridge's JSON text of `v`: the adapted value, checked.
  function jsonText(v) {
    return checkedText(adaptText(v));
  }

  // Bridge envelopes are built as text, so user `toJSON` on Object.prototype cannot rewrite them.
  // `fields` is a list of [key, value] pairs; each value goes through the JSON adapter, except
  // that a [key, text, true] triple carries JSON text built by the prelude itself.
  function envelope(fields) {
    let out = "{";
    for (let i = 0; i < fields.length; i++) {
      if (i > 0) out += ",";
      const field = fields[i];
      // `length === 3` first: a pair has no own index 2, and `field[2]` alone would read a getter
      // user code put on Array.prototype[2] and pass a user value as prelude-built text.
      const builtText = field.length === 3 && field[2] === true;
      out += stringify(field[0]) + ":" + (builtText ? checkedText(field[1]) : jsonText(field[1]));
    }
    return out + "}";
  }

  // While the result or an error text is being made (`finish`, `formatError`), user getters and
  // `toJSON` run inside the report itself, after the host's table of outstanding requests was
  // read: a tool call there can neither be reported nor settled. `request` refuses it with
  // SERIALISING; `finish` then fails the result with the same error, so the refusal is never
  // silent (docs/guest-abi.md, "Prelude").
  const SERIALISING =
    "tools cannot be called while the result is converted to JSON (from a getter or toJSON); call them before returning";
  let serialising = false;
  let refusedDuringSerialising = false;

  // Issues one bridge request; the promise settles with the host's value, passed through `map`
  // first when given (so no `then` of a user-patchable Promise.prototype is involved) and then
  // through `seal` once settled (`settle` needs the value extensible while it resolves).
  function request(method, fields, map, seal) {
    if (serialising) {
      refusedDuringSerialising = true;
      throw new ErrorCtor(SERIALISING);
    }
    const payload = envelope(fields);
    const id = requestNative(method, payload);
    return new PromiseCtor((resolve, rej) => {
      pending[id] = { __proto__: null, resolve, reject: rej, map, seal };
      outstanding++;
    });
  }

  // `request` as every bridge function uses it: failures (a refused method, a value too deep,
  // out of memory, SERIALISING) reject the returned promise instead of throwing.
  function requestOrReject(method, fields, map, seal) {
    try {
      return request(method, fields, map, seal);
    } catch (e) {
      return reject(e);
    }
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
        if (entry.map !== undefined) value = entry.map(value);
      } catch (e) {
        entry.reject(e);
        return true;
      }
      try {
        settle(entry.resolve, value);
        if (entry.seal !== undefined) entry.seal(value);
      } catch (e) {
        // Out of memory while settling: a promise already resolved ignores this.
        entry.reject(e);
      }
    } else {
      entry.reject(new ErrorCtor(StringCtor(payload)));
    }
    return true;
  }

  // The text of a non-string `text()` argument or `console` argument: the JSON text of the
  // adapted value (`null` for undefined in `text`).
  function textOf(value) {
    return typeof value === "string" ? value : adaptText(value);
  }

  function text(value) {
    outputNative(envelope([["type", "text"], ["text", textOf(value)]]));
  }

  function json(value) {
    outputNative(envelope([["type", "json"], ["value", value]]));
  }

  // `console` (D12, docs/contract/decisions.md#d12): one `text` item per call, the arguments
  // joined by spaces (strings as they are, `undefined` as `undefined`, anything else the JSON
  // text of the adapted value), with `[warn] ` / `[error] ` prefixes. Same output path and
  // `maxOutputBytes` accounting as `text`.
  function consoleMethod(name, prefix) {
    const method = {
      [name](...args) {
        let line = prefix;
        for (let i = 0; i < args.length; i++) {
          if (i > 0) line += " ";
          line += args[i] === undefined ? "undefined" : textOf(args[i]);
        }
        outputNative(envelope([["type", "text"], ["text", line]]));
      },
    }[name];
    return method;
  }

  function makeConsole() {
    const c = create(null);
    const methods = [
      ["log", ""],
      ["info", ""],
      ["debug", ""],
      ["warn", "[warn] "],
      ["error", "[error] "],
    ];
    for (let i = 0; i < methods.length; i++) {
      const m = methods[i];
      defineProperty(c, m[0], data(consoleMethod(m[0], m[1]), false, true, false));
    }
    return freeze(c);
  }

  // Error texts are cut to this many UTF-16 units (a guest could throw a 30 MB message), and made
  // well-formed so they convert to host UTF-8.
  const MAX_ERROR_CHARS = 16384;
  const toWellFormed = String.prototype.toWellFormed;
  function clip(text) {
    let out = text;
    if (out.length > MAX_ERROR_CHARS) out = apply(slice, out, [0, MAX_ERROR_CHARS]) + " … (truncated)";
    return apply(toWellFormed, out, []);
  }

  // "<Name>: <message>" plus QuickJS backtrace frames (docs/contract/lifecycle.md#s5-8). Never starts with "at ".
  // Tool calls from getters that run meanwhile are refused (SERIALISING); the run fails anyway.
  function formatError(e) {
    const outer = serialising;
    serialising = true;
    try {
      return clip(formatErrorText(e));
    } finally {
      serialising = outer;
    }
  }

  // Lines of the user's code in this run (set by `setup`); positions in the wrapped script are
  // one line below the user's (docs/contract/decisions.md#d13).
  let userLines = 0;
  const USER_SCRIPT = "openclaw-code-mode:user.js:";

  // One backtrace line with positions in the user's script mapped to the user's own lines
  // (wrapped line L is the user's line L - 1; columns are the same). Returns undefined for a call
  // frame outside the user's code: the wrapper's own call on its last line.
  function userFrame(line) {
    const at = apply(indexOf, line, [USER_SCRIPT]);
    if (at === -1) return line;
    const start = at + USER_SCRIPT.length;
    let end = start;
    while (end < line.length && line[end] >= "0" && line[end] <= "9") end++;
    if (end === start) return line;
    const mapped = numberParse(apply(slice, line, [start, end]), 10) - 1;
    // `at <file>:L:C` (no function name) is a syntax error's position: always kept.
    const bare = apply(indexOf, line, ["at " + USER_SCRIPT]) === 0;
    if (!bare && (mapped < 1 || mapped > userLines)) return undefined;
    return apply(slice, line, [0, start]) + mapped + apply(slice, line, [end]);
  }

  function formatErrorText(e) {
    try {
      if (e !== null && typeof e === "object" && (isError(e) || typeof e.message === "string")) {
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
        let from = 0;
        while (from <= stack.length) {
          let to = apply(indexOf, stack, ["\n", from]);
          if (to === -1) to = stack.length;
          const line = apply(stringTrim, apply(slice, stack, [from, to]), []);
          from = to + 1;
          // Bridge internals are not the user's frames (script name set by the guest).
          if (line === "" || apply(indexOf, line, ["codemode:prelude.js"]) !== -1) continue;
          const frame = userFrame(line);
          if (frame !== undefined) append(frames, "    " + frame);
        }
        if (frames.length > 0) out += "\n" + apply(arrayJoin, frames, ["\n"]);
        return out;
      }
      return "Uncaught " + adaptText(e);
    } catch (_) {
      return "Error: (unprintable exception)";
    }
  }

  // The JSON text of the main promise's value for the report. A tool call from a getter or
  // `toJSON` meanwhile fails the result with SERIALISING, even when the getter caught it.
  function finish(value) {
    serialising = true;
    refusedDuringSerialising = false;
    try {
      const text = jsonText(value);
      if (refusedDuringSerialising) throw new ErrorCtor(SERIALISING);
      return text;
    } finally {
      serialising = false;
    }
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
    defineProperty(globalThis, name, data(value, false, false, false));
  }

  // Math.random for this run: xoshiro128** seeded with four host-random 32-bit words, 53 bits
  // per number. Every VM starts from one post-initialisation image, so QuickJS's own seed (taken
  // once, when the image was made) would give every run the same sequence.
  function seedRandom(seed) {
    let a = seed[0] | 0, b = seed[1] | 0, c = seed[2] | 0, d = seed[3] | 0;
    if ((a | b | c | d) === 0) a = 1;
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
    defineProperty(MathObj, "random", data(random, true, false, true));
  }

  // The read-only `API` virtual files (docs/contract/mcp.md#s7-4): [{path, description, bytes, content}].
  // Only captured intrinsics and `append`: a user's String/Array prototype changes cannot alter
  // what `list` and `read` answer.
  function makeApi(filesOf) {
    const list = function list(prefix) {
      return new PromiseCtor((resolve) => {
        const files = filesOf();
        let p = typeof prefix === "string" ? apply(stringTrim, prefix, []) : "";
        while (apply(stringEndsWith, p, ["/"])) p = apply(slice, p, [0, -1]);
        const out = [];
        for (let i = 0; i < files.length; i++) {
          const f = files[i];
          // A per-tool file (`nested`) is listed only under its own directory
          // (`API.list("mcp/<server>")`, docs/mcp.md "One tool's declaration").
          const shown = f.nested === true
            ? p !== "" && (f.path === p || apply(slice, f.path, [0, apply(stringLastIndexOf, f.path, ["/"])]) === p)
            : p === "" || f.path === p || apply(stringStartsWith, f.path, [p + "/"]);
          if (shown) {
            const entry = create(null);
            entry.path = f.path;
            entry.description = f.description;
            entry.bytes = f.bytes;
            append(out, toPlain(entry));
          }
        }
        const answer = create(null);
        answer.files = out;
        settle(resolve, toPlain(answer));
      });
    };
    const read = function read(path) {
      return new PromiseCtor((resolve, rej) => {
        let p = typeof path === "string" ? path : "";
        if (apply(stringStartsWith, p, ["/"])) p = apply(slice, p, [1]);
        if (p === "" || !validSegments(p)) {
          rej(new ErrorCtor("invalid API file path"));
          return;
        }
        const files = filesOf();
        for (let i = 0; i < files.length; i++) {
          const f = files[i];
          if (f.path === p) {
            const entry = create(null);
            entry.path = f.path;
            entry.content = f.content;
            entry.description = f.description;
            entry.bytes = f.bytes;
            settle(resolve, toPlain(entry));
            return;
          }
        }
        rej(new ErrorCtor("Unknown API file: " + p));
      });
    };
    return freeze({ list, read });
  }

  // Whether no "/"-separated segment of `p` is empty, "." or "..". A scan with the captured
  // indexOf, not `split` (which would call a user's `String.prototype[Symbol.split]`).
  function validSegments(p) {
    let from = 0;
    for (;;) {
      let to = apply(indexOf, p, ["/", from]);
      if (to === -1) to = p.length;
      const segment = apply(slice, p, [from, to]);
      if (segment === "" || segment === "." || segment === "..") return false;
      if (to === p.length) return true;
      from = to + 1;
    }
  }

  // A null-prototype record as an ordinary object (its own enumerable properties defined, not
  // set, so Object.prototype setters never run), for values handed to user code.
  function toPlain(record) {
    const out = {};
    const ks = keys(record);
    for (let i = 0; i < ks.length; i++) {
      defineProperty(out, ks[i], data(record[ks[i]], true, true, true));
    }
    return out;
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
      // check, instead of turning the whole list into one string. The list is built as text.
      let list = "[";
      try {
        for (let i = 0; i < count; i++) {
          if (i > 0) list += ",";
          list += adaptText(args[i]);
        }
      } catch (e) {
        return reject(e);
      }
      return requestOrReject("namespace", [
        ["namespace", "mcp"],
        ["path", path],
        ["args", list + "]", true],
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
    const object = mcp !== null && typeof mcp === "object";
    const paths = object && isArray(mcp.paths) ? mcp.paths : [];
    const offline = object && isArray(mcp.offline) ? mcp.offline : [];
    if (paths.length === 0 && offline.length === 0) return undefined;
    return fillMcp(create(null), mcp);
  }

  // The getter of `MCP.<server>` for a configured server that is not connected: it throws
  // `message` (`MCP server "<name>" is not connected: …`, docs/mcp.md).
  function offlineGetter(message) {
    return function () {
      throw new ErrorCtor(message);
    };
  }

  // Builds the scopes of `mcp` (whose `paths` is an array) into the null-prototype `root` and
  // deep-freezes it. `mcp.offline` ([[identifier, serverName, message]]) adds a non-enumerable
  // accessor per offline server (so `Object.keys(MCP)` lists the servers that can be called).
  function fillMcp(root, mcp) {
    const object = mcp !== null && typeof mcp === "object";
    const paths = object && isArray(mcp.paths) ? mcp.paths : [];
    const names = object && isArray(mcp.serverNames) ? mcp.serverNames : [];
    const offline = object && isArray(mcp.offline) ? mcp.offline : [];
    for (let i = 0; i < offline.length; i++) {
      const entry = offline[i];
      if (!isArray(entry) || typeof entry[0] !== "string" || typeof entry[2] !== "string") continue;
      defineProperty(root, entry[0], {
        __proto__: null,
        get: offlineGetter(entry[2]),
        set: undefined,
        enumerable: false,
        configurable: true,
      });
    }
    for (let i = 0; i < names.length; i++) {
      const scope = create(null);
      defineProperty(scope, "$serverName", data(names[i][1], false, true, false));
      // Configurable until freezeDeep below, so a lazy fill an out-of-memory error cut short
      // can run again (the frozen result is the same either way).
      defineProperty(root, names[i][0], data(scope, false, true, true));
    }
    for (let i = 0; i < paths.length; i++) {
      const path = paths[i];
      let target = root;
      for (let j = 0; j < path.length - 1; j++) {
        let next = target[path[j]];
        if (next === undefined) {
          next = create(null);
          defineProperty(target, path[j], data(next, false, true, true));
        }
        target = next;
      }
      defineProperty(target, path[path.length - 1], data(namespaceCall(path), false, true, true));
    }
    return freezeDeep(root);
  }

  function yieldControl(reason) {
    // Resolves with the bridge value {status: "yielded", reason} (docs/contract/lifecycle.md#s5-10).
    return requestOrReject("yield", [["reason", reason === undefined ? null : reason]]);
  }

  // `nodes` (docs/contract/nodes.md#s8): thin calls of the `nodes` bridge method. The host
  // (codemode-facade's nodes.rs) validates the arguments, calls the core `nodes` tool, projects
  // and matches the paired nodes and words every error, so nothing here decides what reaches the
  // tool. Requests: {action: "list"}, {action: "get", idOrName}, {action: "invoke", node, command,
  // paramsJson} with paramsJson = JSON.stringify of the adapted `params ?? {}`.
  function nodesInvoke(node, command, params) {
    const fields = [
      ["action", "invoke"],
      ["node", node === undefined ? null : node],
      ["command", command === undefined ? null : command],
    ];
    try {
      // `{}` as text: an object literal would inherit a program's Object.prototype.toJSON.
      append(fields, ["paramsJson", params === undefined || params === null ? "{}" : jsonText(params)]);
    } catch (e) {
      return reject(e);
    }
    return requestOrReject("nodes", fields);
  }

  // The frozen handle of one paired node: {id, name, invoke} and, when the host reports that the
  // node advertises `fs.listDir`, `listDir(path)`. Never `exec`.
  function nodeHandle(value) {
    const id = own(value, "id");
    const name = own(value, "name");
    const handle = {};
    const invoke = function invoke(command, params) {
      return nodesInvoke(id, command, params);
    };
    defineProperty(handle, "id", data(id, false, true, false));
    defineProperty(handle, "name", data(name, false, true, false));
    defineProperty(handle, "invoke", data(invoke, false, true, false));
    if (own(value, "listDir") === true) {
      const listDir = function listDir(path) {
        return nodesInvoke(id, "fs.listDir", { __proto__: null, path });
      };
      defineProperty(handle, "listDir", data(listDir, false, true, false));
    }
    // Frozen by `request`'s `seal` once settled.
    return handle;
  }

  function makeNodes() {
    const list = function list() {
      return requestOrReject("nodes", [["action", "list"]]);
    };
    const get = function get(idOrName) {
      return requestOrReject(
        "nodes",
        [["action", "get"], ["idOrName", idOrName === undefined ? null : idOrName]],
        nodeHandle,
        freeze,
      );
    };
    const n = {};
    defineProperty(n, "list", data(list, false, true, false));
    defineProperty(n, "get", data(get, false, true, false));
    return freeze(n);
  }

  // The `input` field of a call: `{}` when the input is undefined, as text (an object literal
  // would inherit a program's Object.prototype.toJSON).
  function inputField(input) {
    return input === undefined ? ["input", "{}", true] : ["input", input];
  }

  // The `tools` functions every catalog has (the bridge methods), on a null-prototype object in
  // the order `Object.keys(tools)` lists them.
  function makeToolsApi() {
    const api = create(null);
    api.search = function search(query, options) {
      const limit = options !== null && typeof options === "object" ? options.limit : undefined;
      const fields = [["query", query === undefined ? null : query]];
      if (limit !== undefined) append(fields, ["limit", limit]);
      return requestOrReject("search", fields);
    };
    api.describe = function describe(id) {
      try {
        return requestOrReject("describe", [["id", entryId(id, "describe")]]);
      } catch (e) {
        return reject(e);
      }
    };
    api.call = function call(id, input) {
      try {
        return requestOrReject("call", [["id", entryId(id, "call")], inputField(input)]);
      } catch (e) {
        return reject(e);
      }
    };
    api.callValue = function callValue(id, input) {
      try {
        return requestOrReject("callValue", [
          ["id", entryId(id, "callValue")],
          inputField(input),
        ]);
      } catch (e) {
        return reject(e);
      }
    };
    return api;
  }

  // The convenience `tools.<name>` of the tool `id` (docs/contract/catalog.md#s3-4).
  function convenience(api, id) {
    return function (input) {
      return api.callValue(id, input);
    };
  }

  // Defines `value` as `name` on `target` the way `freeze` leaves it (defineProperty, not
  // assignment: a tool named "__proto__" must not replace the prototype).
  function defineFrozen(target, name, value) {
    defineProperty(target, name, data(value, false, true, false));
  }

  // The eager install (a run context holding the whole catalog, docs/guest-abi.md "Run
  // context"): every global built now, from `context` = {tools, apiFiles, mcp}. Returns
  // {allTools, tools, api, mcp}, `mcp` undefined when there is no MCP namespace.
  function installEager(api, context) {
    const apiFiles = isArray(context.apiFiles) ? context.apiFiles : [];
    const entries = isArray(context.tools) ? context.tools : [];
    const allTools = deepFreeze(entries);
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
      api[name] = convenience(api, entry.id);
    }
    const toolsObject = {};
    const names = keys(api);
    for (let i = 0; i < names.length; i++) defineFrozen(toolsObject, names[i], api[names[i]]);
    return { allTools, tools: freeze(toolsObject), api: makeApi(() => apiFiles), mcp: makeMcp(context.mcp) };
  }

  // The traps of a lazy global (`lazyObject`), each forwarding to the Reflect function of the
  // same name, captured here.
  const LAZY_TRAPS = [
    "get", "has", "ownKeys", "getOwnPropertyDescriptor", "defineProperty", "deleteProperty",
    "isExtensible", "preventExtensions", "setPrototypeOf",
  ];
  const reflect = create(null);
  for (let i = 0; i < LAZY_TRAPS.length; i++) reflect[LAZY_TRAPS[i]] = Reflect[LAZY_TRAPS[i]];
  const reflectGet = Reflect.get;
  const reflectHas = Reflect.has;

  // A Proxy over `target` that runs `fill(target)` (which fills and freezes it) before the first
  // operation that needs the target's contents, then deletes its own traps: from then on every
  // operation is the frozen target's own, with its own results and errors. `get` and `has` may
  // be replaced (`lookups`) by traps that answer single keys without filling. There is no `set`
  // trap: an assignment reaches the target, and then the proxy's `getOwnPropertyDescriptor`
  // or `defineProperty`, which fill first, so it fails the way it does on a frozen object.
  function lazyObject(target, fill, lookups) {
    const handler = create(null);
    const state = { __proto__: null, filled: false };
    function ensure() {
      if (state.filled) return;
      fill(target);
      state.filled = true;
      for (let i = 0; i < LAZY_TRAPS.length; i++) delete handler[LAZY_TRAPS[i]];
    }
    for (let i = 0; i < LAZY_TRAPS.length; i++) {
      const forward = reflect[LAZY_TRAPS[i]];
      handler[LAZY_TRAPS[i]] = function (a, b, c) {
        ensure();
        return forward(a, b, c);
      };
    }
    if (lookups !== undefined) {
      handler.get = function (t, key, receiver) {
        if (!state.filled) {
          const v = lookups(key);
          if (v !== undefined) return v;
        }
        return reflectGet(t, key, receiver);
      };
      handler.has = function (t, key) {
        return (!state.filled && lookups(key) !== undefined) || reflectHas(t, key);
      };
    }
    return new ProxyCtor(target, handler);
  }

  // `safeName.test(s)` without RegExp.prototype (a program may have replaced `exec`/`test` by the
  // time a lazy lookup runs): only such names have conveniences, so nothing else is asked of the
  // host (a lone surrogate could not even be passed to it).
  function isSafeName(s) {
    if (s.length === 0) return false;
    for (let i = 0; i < s.length; i++) {
      const c = apply(charCodeAt, s, [i]);
      const letter = (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 36;
      if (!letter && !(i > 0 && c >= 48 && c <= 57)) return false;
    }
    return true;
  }

  // The lazy install: `tools`, `ALL_TOOLS`, `MCP` are Proxies over targets filled from the host's
  // run context on first use (`lazyObject`); `tools.<name>` alone asks the host for that one
  // name; `API` reads the files on its first call. Returns {allTools, tools, api, mcp}, `mcp`
  // undefined when the catalog has no MCP namespace (`hasMcp`).
  function installLazy(api, hasMcp) {
    const toolsTarget = {};
    const names = keys(api);
    for (let i = 0; i < names.length; i++) defineFrozen(toolsTarget, names[i], api[names[i]]);
    // Conveniences handed out before the fill, so the fill installs the very same functions.
    const made = create(null);
    const absent = create(null);
    // A name asked before is answered from `made` first: a program's `tools.<name>` in a loop
    // runs this on every iteration, and `isSafeName` costs a call per character
    // (docs/benchmarks.md, "Per-call guest JavaScript"). `made` holds only names that passed
    // every check below, and the names `fillConveniences` takes from the host's list, which the
    // host makes by the same rules (identifiers, no reserved name).
    function lookup(key) {
      if (typeof key !== "string") return undefined;
      let f = made[key];
      if (f !== undefined) return f;
      if (!isSafeName(key) || reserved[key] || absent[key]) return undefined;
      const id = convenienceId(key);
      if (typeof id !== "string") {
        absent[key] = true;
        return undefined;
      }
      f = convenience(api, id);
      made[key] = f;
      return f;
    }
    // Writable and configurable until the final freeze, so a fill an out-of-memory error cut
    // short can run again.
    function fillConveniences(target) {
      const pairs = contextSection(SECTION_CONVENIENCES);
      for (let i = 0; i < pairs.length; i++) {
        const name = pairs[i][0];
        let f = made[name];
        if (f === undefined) f = convenience(api, pairs[i][1]);
        made[name] = f;
        defineProperty(target, name, data(f, true, true, true));
      }
      freeze(target);
    }
    function fillAllTools(target) {
      const parsed = contextSection(SECTION_TOOLS);
      const entries = isArray(parsed) ? parsed : [];
      for (let i = 0; i < entries.length; i++) {
        defineProperty(target, i, data(deepFreeze(entries[i]), true, true, true));
      }
      freeze(target);
    }
    let files;
    function filesOf() {
      if (files === undefined) {
        const parsed = contextSection(SECTION_API_FILES);
        files = isArray(parsed) ? parsed : [];
      }
      return files;
    }
    return {
      allTools: lazyObject([], fillAllTools),
      tools: lazyObject(toolsTarget, fillConveniences, lookup),
      api: makeApi(filesOf),
      mcp: hasMcp ? lazyObject(create(null), (target) => fillMcp(target, contextSection(SECTION_MCP))) : undefined,
    };
  }

  // Installs the run's globals. `contextJson` is {lazy: true, mcp: <has an MCP namespace>} for
  // a run context the guest reads through the host imports when a program first touches the
  // catalog (`installLazy`), else the whole context {tools: [compact catalog entries],
  // apiFiles: [{path, description, bytes, content}], mcp} (`installEager`).
  // `lines` is the number of lines of the user's code (error texts cite them, D13).
  //
  // The lazy install's objects (for a catalog with and one without an MCP namespace), `console`
  // and `nodes` do not depend on the run, so they are made once, below, when the prelude itself
  // runs: at pre-initialisation, so they are part of the image every run starts from, and each
  // run still gets objects no other run has touched (docs/benchmarks.md, "Guest CPU").
  function setup(contextJson, seed, lines) {
    seedRandom(seed);
    userLines = typeof lines === "number" ? lines : 0;
    const context = parse(contextJson);
    const lazy = context !== null && typeof context === "object" && context.lazy === true;
    const globals = lazy
      ? LAZY_GLOBALS[context.mcp === true ? 1 : 0]
      : installEager(makeToolsApi(), context);
    const mcp = globals.mcp;
    define("ALL_TOOLS", globals.allTools);
    define("tools", globals.tools);
    define("API", globals.api);
    const namespaces = create(null);
    if (mcp !== undefined) {
      namespaces.MCP = mcp;
      define("MCP", mcp);
    }
    define("namespaces", freeze(namespaces));
  }

  // Made once, when the prelude runs (see `setup`).
  const LAZY_GLOBALS = [installLazy(makeToolsApi(), false), installLazy(makeToolsApi(), true)];
  const CONSOLE = makeConsole();
  const NODES = makeNodes();
  // The globals that are the same in every run, defined once, in the image: defining a global
  // costs a property descriptor read and a new shape of the global object, and these five were
  // 4% of a trivial exec's samples when `setup` defined them per run (docs/benchmarks.md,
  // "Guest CPU"). Non-writable and non-configurable as before; `setup` adds the run's own.
  define("text", text);
  define("json", json);
  define("yield_control", yieldControl);
  define("console", CONSOLE);
  define("nodes", NODES);

  return freeze({
    setup,
    deliver,
    finish,
    formatError,
    outstanding: () => outstanding,
  });
});
