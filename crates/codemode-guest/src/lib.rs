//! The codemode guest: QuickJS (through `rquickjs`) compiled to `wasm32-wasip1`, plus the bridge ABI
//! the host (`codemode-runtime`) drives. The ABI (exports, imports, memory ownership, status codes,
//! report format) is specified in `docs/guest-abi.md`; the wire format itself (the inputs, the
//! report, the code wrapper and script names) is `codemode_bridge::abi`, shared with the host, so
//! this crate only parses and builds those types.
//!
//! The guest holds exactly one QuickJS runtime and context. All of its state lives in linear memory,
//! so the host can snapshot the VM between calls by copying memory and `__stack_pointer`, and resume
//! it later in a fresh instance.

mod heap;

use std::cell::RefCell;
use std::collections::HashMap;

use codemode_bridge::abi::{
    self, DeliverInput, InitInput, Report, ReportRequest, ReportStatus, StartInput,
    PRELUDE_SCRIPT_NAME, USER_SCRIPT_NAME,
};
use codemode_bridge::{BridgeMethod, ProtocolError};
use rquickjs::context::EvalOptions;
use rquickjs::function::Func;
use rquickjs::promise::PromiseState;
use rquickjs::{qjs, Context, Ctx, Function, Object, Persistent, Promise, Runtime, Value};
use serde_json::value::RawValue;

#[link(wasm_import_module = "codemode")]
extern "C" {
    /// Asks the host whether the guest must stop now (deadline or abort). Non-zero = stop.
    /// Polled by QuickJS's interrupt handler.
    fn interrupt() -> i32;
    /// Byte length of run-context section `section` (docs/guest-abi.md, "Run context"); -1
    /// for an unknown section or when the host has no context.
    fn context_len(section: i32) -> i32;
    /// Copies the whole of section `section` (`len` must be its length) to `ptr`; 0 on
    /// success, -1 otherwise.
    fn context_read(section: i32, ptr: *mut u8, len: i32) -> i32;
    /// The byte length of the tool id behind the convenience `tools.<name>` (-1: none), copied
    /// to `out` when it fits in `out_cap` bytes.
    fn context_convenience(name: *const u8, name_len: i32, out: *mut u8, out_cap: i32) -> i32;
}

extern "C" {
    fn __wasm_call_ctors();
    /// wasi-libc: fills `len` (≤ 256) bytes from WASI `random_get`, i.e. from the host.
    fn getentropy(buf: *mut u8, len: usize) -> i32;
}

/// Four 32-bit words from the host's random source, seeding the run's `Math.random`. Every VM
/// starts from the same post-initialisation image, so QuickJS's own time-based seed would repeat.
fn random_seed() -> [u32; 4] {
    let mut bytes = [0u8; 16];
    // SAFETY: the buffer is valid for 16 bytes.
    if unsafe { getentropy(bytes.as_mut_ptr(), bytes.len()) } != 0 {
        bytes = [0x5a; 16];
    }
    let word = |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    [word(0), word(4), word(8), word(12)]
}

/// Reactor entry point: runs static constructors once, before any other export.
///
/// # Safety
/// Must be called exactly once, first, by the host.
#[no_mangle]
pub unsafe extern "C" fn _initialize() {
    // SAFETY: wasi-libc's constructor runner; the caller guarantees this is the first call and
    // happens once, which is what `__wasm_call_ctors` requires.
    unsafe { __wasm_call_ctors() };
}

struct Guest {
    rt: Runtime,
    ctx: Context,
    internals: Persistent<Object<'static>>,
    main: Option<Persistent<Promise<'static>>>,
}

#[derive(Default)]
struct Outbox {
    /// The methods `cm_init` allowed.
    methods: Vec<BridgeMethod>,
    counters: HashMap<BridgeMethod, u64>,
    /// Requests created since the last report.
    requests: Vec<ReportRequest>,
    /// JSON output items created since the last report.
    output: Vec<Box<RawValue>>,
    /// Bytes of `output`; past `max_output_bytes` items are dropped and the step reports an
    /// output overflow (the host's limit would fail the result anyway).
    output_bytes: u64,
    max_output_bytes: u64,
    output_overflow: bool,
    /// Past `max_requests` requests in one step, args are dropped and the step reports a request
    /// overflow (the host's pending cap would fail the run anyway).
    max_requests: u64,
    request_overflow: bool,
}

thread_local! {
    static GUEST: RefCell<Option<Guest>> = const { RefCell::new(None) };
    static OUTBOX: RefCell<Outbox> = RefCell::new(Outbox::default());
    static REPORT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Allocates `len` bytes (zeroed) for the host to write an input into. Returns 0 when `len` is 0
/// or the allocation fails. Ownership passes back to the guest with the call that takes the
/// buffer. The buffer is a `Box<[u8]>` of exactly `len` bytes (not a `Vec`, whose capacity
/// `try_reserve_exact` only promises to be *at least* `len`), so [`take_input`] and
/// [`cm_dealloc`] rebuild it with the very layout it was allocated with.
#[no_mangle]
pub extern "C" fn cm_alloc(len: u32) -> *mut u8 {
    if len == 0 {
        return std::ptr::null_mut();
    }
    let mut buf: Vec<u8> = Vec::new();
    if buf.try_reserve_exact(len as usize).is_err() {
        return std::ptr::null_mut();
    }
    buf.resize(len as usize, 0);
    Box::into_raw(buf.into_boxed_slice()).cast::<u8>()
}

/// Rebuilds the `Box<[u8]>` that [`cm_alloc`] handed out.
///
/// # Safety
/// `ptr` must be non-null and come from one `cm_alloc(len)` call with this `len`, and not have
/// been freed or taken since.
unsafe fn boxed_input(ptr: *mut u8, len: u32) -> Box<[u8]> {
    let slice = std::ptr::slice_from_raw_parts_mut(ptr, len as usize);
    // SAFETY: by the caller's contract `slice` is exactly the pointer and length of a live
    // `Box<[u8]>` from `cm_alloc` (same allocator, same layout), owned by no one else.
    unsafe { Box::from_raw(slice) }
}

/// Frees a buffer from [`cm_alloc`] that the host did not pass to a call.
///
/// # Safety
/// `ptr`/`len` must come from one `cm_alloc` call and not have been freed or passed on.
#[no_mangle]
pub unsafe extern "C" fn cm_dealloc(ptr: *mut u8, len: u32) {
    if !ptr.is_null() && len > 0 {
        // SAFETY: the caller passes a buffer from one `cm_alloc(len)` call, not freed or passed
        // on, which is `boxed_input`'s contract.
        drop(unsafe { boxed_input(ptr, len) });
    }
}

/// Pointer to the report of the last call (UTF-8 JSON). Valid until the next call.
#[no_mangle]
pub extern "C" fn cm_report_ptr() -> *const u8 {
    REPORT.with(|r| r.borrow().as_ptr())
}

/// Length in bytes of the report of the last call.
#[no_mangle]
pub extern "C" fn cm_report_len() -> u32 {
    REPORT.with(|r| r.borrow().len() as u32)
}

/// Takes ownership of an input buffer from [`cm_alloc`] (empty for a null pointer or `len` 0).
///
/// # Safety
/// A non-null `ptr` must come from one `cm_alloc(len)` call, not freed or taken since.
unsafe fn take_input(ptr: *mut u8, len: u32) -> Vec<u8> {
    if ptr.is_null() || len == 0 {
        return Vec::new();
    }
    // SAFETY: non-null, from `cm_alloc(len)` and owned by no one else (the caller's contract).
    unsafe { boxed_input(ptr, len) }.into_vec()
}

/// Takes ownership of an input buffer and parses it; on failure, the protocol-error status.
///
/// # Safety
/// As [`take_input`].
unsafe fn parse_input<T: serde::de::DeserializeOwned>(
    ptr: *mut u8,
    len: u32,
    what: &str,
) -> Result<T, i32> {
    // SAFETY: forwarded from the caller, whose contract is `take_input`'s.
    let bytes = unsafe { take_input(ptr, len) };
    serde_json::from_slice(&bytes).map_err(|e| protocol_error(&format!("bad {what} input: {e}")))
}

/// Stores `report` as the last call's report and returns its status code.
fn set_report(report: &Report) -> i32 {
    // Serialising strings, numbers and raw JSON cannot fail; should it, the empty report is a
    // protocol violation the host detects.
    let bytes = serde_json::to_vec(report).unwrap_or_default();
    REPORT.with(|r| *r.borrow_mut() = bytes);
    report.status.code()
}

fn protocol_error(message: &str) -> i32 {
    set_report(&Report::protocol_error(message))
}

/// Creates the QuickJS runtime and context and evaluates the bridge prelude.
/// Input: [`InitInput`]. Returns 0 (`ready`) or -1 (protocol error).
///
/// # Safety
/// `ptr`/`len` must come from `cm_alloc`; the guest takes ownership.
#[no_mangle]
pub unsafe extern "C" fn cm_init(ptr: *mut u8, len: u32) -> i32 {
    // SAFETY: the host passes a buffer from `cm_alloc` and gives it up (this export's contract).
    let input: InitInput<'static> = match unsafe { parse_input(ptr, len, "init") } {
        Ok(v) => v,
        Err(status) => return status,
    };
    if GUEST.with(|g| g.borrow().is_some()) {
        return protocol_error("already initialised");
    }
    match init(input) {
        Ok(guest) => {
            GUEST.with(|g| *g.borrow_mut() = Some(guest));
            set_report(&Report::new(ReportStatus::Ready))
        }
        Err(e) => protocol_error(&e),
    }
}

fn init(input: InitInput<'static>) -> Result<Guest, String> {
    let rt = Runtime::new_with_alloc(heap::HeapAllocator).map_err(|e| format!("runtime: {e}"))?;
    heap::set_limit(input.memory_limit_bytes as usize);
    rt.set_max_stack_size(input.max_stack_bytes as usize);
    // SAFETY: `interrupt` is a host import taking no arguments and touching no guest memory.
    rt.set_interrupt_handler(Some(Box::new(|| unsafe { interrupt() != 0 })));
    let ctx = Context::full(&rt).map_err(|e| format!("context: {e}"))?;
    OUTBOX.with(|o| o.borrow_mut().methods = input.methods);
    let internals = ctx.with(|ctx| -> Result<Persistent<Object<'static>>, String> {
        let native = Object::new(ctx.clone()).map_err(|e| e.to_string())?;
        native
            .set("request", Func::from(native_request))
            .map_err(|e| e.to_string())?;
        native
            .set("output", Func::from(native_output))
            .map_err(|e| e.to_string())?;
        native
            .set("isPromise", Func::from(native_is_promise))
            .map_err(|e| e.to_string())?;
        native
            .set("isError", Func::from(native_is_error))
            .map_err(|e| e.to_string())?;
        native
            .set("jsonDepth", Func::from(native_json_depth))
            .map_err(|e| e.to_string())?;
        native
            .set("refusedAllocations", Func::from(native_refused_allocations))
            .map_err(|e| e.to_string())?;
        native
            .set("context", Func::from(native_context))
            .map_err(|e| e.to_string())?;
        native
            .set("convenience", Func::from(native_convenience))
            .map_err(|e| e.to_string())?;
        let mut opts = EvalOptions::default();
        opts.global = true;
        opts.strict = true;
        opts.filename = Some(PRELUDE_SCRIPT_NAME.to_string());
        let factory: Function = ctx
            .eval_with_options(input.prelude.into_owned().into_bytes(), opts)
            .map_err(|e| format!("prelude: {}", describe_exception(&ctx, e)))?;
        let internals: Object = factory
            .call((native,))
            .map_err(|e| format!("prelude: {}", describe_exception(&ctx, e)))?;
        Ok(Persistent::save(&ctx, internals))
    })?;
    Ok(Guest {
        rt,
        ctx,
        internals,
        main: None,
    })
}

fn native_request<'js>(ctx: Ctx<'js>, method: String, args: String) -> rquickjs::Result<String> {
    let id = OUTBOX.with(|o| {
        let mut o = o.borrow_mut();
        let method = BridgeMethod::parse(&method).filter(|m| o.methods.contains(m))?;
        let n = o.counters.entry(method).or_insert(0);
        *n += 1;
        let id = format!("bridge:{}:{n}", method.as_str());
        if o.request_overflow || o.requests.len() as u64 >= o.max_requests {
            o.request_overflow = true;
            o.requests.clear();
            return Some(id);
        }
        o.requests.push(ReportRequest {
            id: id.clone(),
            method: method.as_str().to_string(),
            args,
        });
        Some(id)
    });
    match id {
        Some(id) => Ok(id),
        None => Err(throw_error(
            &ctx,
            &ProtocolError::UnsupportedMethod.to_string(),
        )),
    }
}

/// `native.isPromise(value)`: the engine's own brand check (`JS_PromiseState`), which user code
/// cannot redirect the way it can `instanceof` (the JSON adapter's D14 replacement).
fn native_is_promise(value: Value<'_>) -> bool {
    value.is_promise()
}

/// `native.isError(value)`: the engine's own brand check (`JS_IsError`): objects made by an
/// `Error` constructor, subclasses included.
fn native_is_error(value: Value<'_>) -> bool {
    value.is_error()
}

/// `native.jsonDepth(text)`: how deeply arrays and objects nest in the JSON text `text` (a
/// scalar is 0, `[1]` is 1), for the bridge's depth limit (docs/guest-abi.md, "Prelude").
fn native_json_depth(text: String) -> u32 {
    json_depth(text.as_bytes())
}

/// The nesting depth of arrays and objects in well-formed JSON text (brackets inside strings do
/// not count).
fn json_depth(text: &[u8]) -> u32 {
    let (mut depth, mut max, mut in_string, mut escaped) = (0u32, 0u32, false, false);
    for &b in text {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// `native.refusedAllocations()`: allocations the heap limit (or linear memory) refused so
/// far; the JSON adapter tells an out-of-memory failure from an unstringifiable value with it.
fn native_refused_allocations() -> f64 {
    heap::refused_allocations() as f64
}

/// `native.context(section)`: run-context section `section` (docs/guest-abi.md, "Run
/// context") copied in from the host and parsed with the engine's JSON parser. Throws when the
/// host has no such section or its text is not JSON; running out of memory is the usual
/// catchable error.
fn native_context<'js>(ctx: Ctx<'js>, section: i32) -> rquickjs::Result<Value<'js>> {
    // SAFETY: a host import taking a number and touching no guest memory.
    let len = unsafe { context_len(section) };
    let Ok(len) = usize::try_from(len) else {
        return Err(throw_error(&ctx, "code mode run context is unavailable"));
    };
    let mut bytes: Vec<u8> = Vec::new();
    // One more byte for the NUL `json_parse` appends (no reallocation of a large section).
    if bytes.try_reserve_exact(len + 1).is_err() {
        return Err(throw_error(&ctx, "out of memory"));
    }
    bytes.resize(len, 0);
    // SAFETY: `bytes` is valid for `len` bytes; the host writes exactly `len` bytes or none.
    if unsafe { context_read(section, bytes.as_mut_ptr(), len as i32) } != 0 {
        return Err(throw_error(&ctx, "code mode run context is unavailable"));
    }
    ctx.json_parse(bytes)
}

/// `native.convenience(name)`: the tool id behind the convenience `tools.<name>`, or
/// `undefined` when the catalog has none (one host lookup, whatever the catalog's size).
fn native_convenience(name: String) -> Option<String> {
    let mut out = vec![0u8; 128];
    loop {
        // SAFETY: `name` and `out` are valid for the lengths passed; the host writes at most
        // `out.len()` bytes to `out`.
        let len = unsafe {
            context_convenience(
                name.as_ptr(),
                i32::try_from(name.len()).ok()?,
                out.as_mut_ptr(),
                out.len() as i32,
            )
        };
        let len = usize::try_from(len).ok()?;
        if len <= out.len() {
            out.truncate(len);
            return String::from_utf8(out).ok();
        }
        out = vec![0u8; len];
    }
}

/// `native.output(itemJson)`: buffers one output item (JSON text built by the prelude). Text that
/// is not JSON (a prelude bug) throws instead of corrupting the report.
fn native_output<'js>(ctx: Ctx<'js>, item: String) -> rquickjs::Result<()> {
    OUTBOX.with(|o| {
        let mut o = o.borrow_mut();
        if o.output_overflow {
            return Ok(());
        }
        o.output_bytes += item.len() as u64;
        if o.output_bytes > o.max_output_bytes {
            o.output_overflow = true;
            o.output.clear();
            return Ok(());
        }
        match RawValue::from_string(item) {
            Ok(item) => {
                o.output.push(item);
                Ok(())
            }
            Err(_) => Err(throw_error(&ctx, "code mode output item is not JSON")),
        }
    })
}

fn throw_error(ctx: &Ctx<'_>, message: &str) -> rquickjs::Error {
    match rquickjs::Exception::from_message(ctx.clone(), message) {
        Ok(e) => ctx.throw(e.into_value()),
        Err(e) => e,
    }
}

/// Renders a pending exception as text without running user code in the host's path.
fn describe_exception(ctx: &Ctx<'_>, err: rquickjs::Error) -> String {
    if let rquickjs::Error::Exception = err {
        let value = ctx.catch();
        if let Some(ex) = value.as_exception() {
            return ex.message().unwrap_or_else(|| "exception".to_string());
        }
        return format!("{value:?}");
    }
    err.to_string()
}

/// Installs the run's globals and evaluates the wrapped user code.
/// Input: [`StartInput`]. Returns the report's status code (see docs).
///
/// # Safety
/// `ptr`/`len` must come from `cm_alloc`; the guest takes ownership.
#[no_mangle]
pub unsafe extern "C" fn cm_start(ptr: *mut u8, len: u32) -> i32 {
    // SAFETY: the host passes a buffer from `cm_alloc` and gives it up (this export's contract).
    let input: StartInput<'static> = match unsafe { parse_input(ptr, len, "start") } {
        Ok(v) => v,
        Err(status) => return status,
    };
    GUEST.with(|g| {
        let mut g = g.borrow_mut();
        let Some(guest) = g.as_mut() else {
            return protocol_error("not initialised");
        };
        if guest.main.is_some() {
            return protocol_error("already started");
        }
        heap::set_limit(input.memory_limit_bytes as usize);
        heap::start_step();
        OUTBOX.with(|o| {
            let mut o = o.borrow_mut();
            o.max_output_bytes = input.max_output_bytes;
            o.max_requests = input.max_requests;
        });
        let internals = guest.internals.clone();
        let started = guest.ctx.with(
            |ctx| -> Result<Result<Persistent<Promise<'static>>, String>, String> {
                let internals = internals.restore(&ctx).map_err(|e| e.to_string())?;
                let setup: Function = internals.get("setup").map_err(|e| e.to_string())?;
                let seed = random_seed().to_vec();
                // Lines of the user's code, so error texts can cite the user's own lines (D13).
                let lines = input.code.matches('\n').count() + 1;
                if let Err(e) =
                    setup.call::<_, ()>((input.context.into_owned(), seed, lines as f64))
                {
                    return Err(format!("setup: {}", describe_exception(&ctx, e)));
                }
                let wrapped = abi::wrap_user_code(&input.code);
                match eval_user_script(&ctx, wrapped) {
                    Ok(v) => match v.into_promise() {
                        Some(p) => Ok(Ok(Persistent::save(&ctx, p))),
                        None => Err("wrapper did not produce a promise".to_string()),
                    },
                    Err(rquickjs::Error::Exception) => {
                        let ex = ctx.catch();
                        Ok(Err(format_error(&ctx, &internals, ex)))
                    }
                    Err(e) => Ok(Err(e.to_string())),
                }
            },
        );
        match started {
            Err(e) => protocol_error(&e),
            Ok(Err(error)) => finish_failed(guest, error),
            Ok(Ok(main)) => {
                guest.main = Some(main);
                report(guest)
            }
        }
    })
}

/// Evaluates the wrapped user code as a global, sloppy-mode script named [`USER_SCRIPT_NAME`]
/// with a backtrace barrier. `Ctx::eval_with_options` copies its source into a `CString` and so
/// refused every NUL (`String contained internal null bytes`); a NUL is legal JavaScript inside
/// strings, templates and comments (and a SyntaxError elsewhere, from the parser), so QuickJS
/// gets the bytes and their length instead.
fn eval_user_script<'js>(ctx: &Ctx<'js>, source: String) -> rquickjs::Result<Value<'js>> {
    let name = std::ffi::CString::new(USER_SCRIPT_NAME)?;
    let mut bytes = source.into_bytes();
    let len = bytes.len();
    // JS_Eval reads the byte at `len` (the tokenizer tells the end by a NUL at `buf_end`).
    bytes.push(0);
    let flags = (qjs::JS_EVAL_TYPE_GLOBAL | qjs::JS_EVAL_FLAG_BACKTRACE_BARRIER) as i32;
    // SAFETY: the context pointer is live for 'js; `bytes` holds `len` bytes plus the NUL
    // QuickJS reads at `len`, and `name` is a NUL-terminated string; both outlive the call.
    let raw = unsafe {
        qjs::JS_Eval(
            ctx.as_raw().as_ptr(),
            bytes.as_ptr().cast(),
            len as _,
            name.as_ptr(),
            flags,
        )
    };
    // SAFETY: JS_Eval returns a value this context owns (or the exception marker), which the
    // `Value` now owns and frees once.
    let value = unsafe { Value::from_raw(ctx.clone(), raw) };
    if value.is_exception() {
        Err(rquickjs::Error::Exception)
    } else {
        Ok(value)
    }
}

/// After a call the host ended by trapping the instance (the epoch backstop of a deadline or an
/// abort), leaves a `failed` report carrying the output items that call had buffered, so the
/// host keeps output produced before the stop (docs/contract/lifecycle.md#s5-3). Touches only
/// the outbox and the report buffer, never QuickJS, whose state the trap left mid-operation;
/// the host resets `__stack_pointer` first and discards the instance afterwards. Returns 2
/// (`failed`), or -1 when the outbox or the report buffer was in use at the trap.
#[no_mangle]
pub extern "C" fn cm_take_output() -> i32 {
    let taken = OUTBOX.with(|o| {
        let mut o = o.try_borrow_mut().ok()?;
        let output = std::mem::take(&mut o.output);
        let overflow = o.output_overflow;
        Some((output, overflow))
    });
    let Some((output, output_overflow)) = taken else {
        return -1;
    };
    let report = Report {
        error: Some("InternalError: interrupted".to_string()),
        output,
        output_overflow,
        ..Report::new(ReportStatus::Failed)
    };
    let bytes = serde_json::to_vec(&report).unwrap_or_default();
    REPORT.with(|r| match r.try_borrow_mut() {
        Ok(mut r) => {
            *r = bytes;
            report.status.code()
        }
        Err(_) => -1,
    })
}

/// Settles one bridge request and drains the job queue.
/// Input: [`DeliverInput`]. Returns the report's status code (see docs).
///
/// # Safety
/// `ptr`/`len` must come from `cm_alloc`; the guest takes ownership.
#[no_mangle]
pub unsafe extern "C" fn cm_deliver(ptr: *mut u8, len: u32) -> i32 {
    // SAFETY: the host passes a buffer from `cm_alloc` and gives it up (this export's contract).
    let input: DeliverInput<'static> = match unsafe { parse_input(ptr, len, "deliver") } {
        Ok(v) => v,
        Err(status) => return status,
    };
    GUEST.with(|g| {
        let mut g = g.borrow_mut();
        let Some(guest) = g.as_mut() else {
            return protocol_error("not initialised");
        };
        if guest.main.is_none() {
            return protocol_error("not started");
        }
        heap::start_step();
        let internals = guest.internals.clone();
        let delivered = guest.ctx.with(|ctx| -> Result<bool, String> {
            let internals = internals.restore(&ctx).map_err(|e| e.to_string())?;
            let deliver: Function = internals.get("deliver").map_err(|e| e.to_string())?;
            // The prelude's `deliver(id, ok, payload)`: JSON text to parse, or an error message.
            let (id, ok, payload) = match input {
                DeliverInput::Resolve { id, json } => (id, true, json),
                DeliverInput::Reject { id, error } => (id, false, error),
            };
            deliver
                .call::<_, bool>((id.into_owned(), ok, payload.into_owned()))
                .map_err(|e| describe_exception(&ctx, e))
        });
        match delivered {
            Err(e) => protocol_error(&format!("deliver: {e}")),
            Ok(false) => protocol_error("unknown or settled bridge request id"),
            Ok(true) => report(guest),
        }
    })
}

/// Drains the job queue, then reports the main promise's state plus new requests and output.
fn report(guest: &mut Guest) -> i32 {
    // Drain pending jobs; an exception escaping a job (interrupt, out of memory) is fatal.
    loop {
        match guest.rt.execute_pending_job() {
            Ok(true) => continue,
            Ok(false) => break,
            Err(job) => {
                let internals = guest.internals.clone();
                let error = job.0.with(|ctx| {
                    let ex = ctx.catch();
                    match internals.restore(&ctx) {
                        Ok(internals) => format_error(&ctx, &internals, ex),
                        Err(e) => e.to_string(),
                    }
                });
                return finish_failed(guest, error);
            }
        }
    }
    let internals = guest.internals.clone();
    let main = guest.main.clone();
    let outcome = guest.ctx.with(|ctx| -> Result<Report, String> {
        let internals = internals.restore(&ctx).map_err(|e| e.to_string())?;
        let outstanding: Function = internals.get("outstanding").map_err(|e| e.to_string())?;
        let outstanding: u32 = outstanding.call(()).map_err(|e| e.to_string())?;
        let Some(main) = main else {
            return Err("not started".to_string());
        };
        let main = main.restore(&ctx).map_err(|e| e.to_string())?;
        let mut report = match main.state() {
            PromiseState::Pending => Report::new(ReportStatus::Pending),
            PromiseState::Resolved => {
                let value: Value = main
                    .result::<Value>()
                    .unwrap_or_else(|| Ok(Value::new_null(ctx.clone())))
                    .unwrap_or_else(|_| Value::new_null(ctx.clone()));
                let finish: Function = internals.get("finish").map_err(|e| e.to_string())?;
                match finish.call::<_, String>((value,)) {
                    Ok(json) => match RawValue::from_string(json) {
                        Ok(value) => Report {
                            value: Some(value),
                            ..Report::new(ReportStatus::Completed)
                        },
                        Err(e) => {
                            failed_report(format!("InternalError: the result is not JSON: {e}"))
                        }
                    },
                    Err(e) => failed_report(match e {
                        rquickjs::Error::Exception => format_error(&ctx, &internals, ctx.catch()),
                        other => other.to_string(),
                    }),
                }
            }
            PromiseState::Rejected => {
                let reason: Value = match main.result::<Value>() {
                    Some(Err(rquickjs::Error::Exception)) => ctx.catch(),
                    Some(Ok(v)) => v,
                    _ => Value::new_undefined(ctx.clone()),
                };
                failed_report(format_error(&ctx, &internals, reason))
            }
        };
        report.outstanding = outstanding;
        Ok(report)
    });
    match outcome {
        Ok(mut report) => {
            take_outbox(&mut report);
            set_report(&report)
        }
        Err(e) => protocol_error(&e),
    }
}

/// A `failed` report carrying `error`.
fn failed_report(error: String) -> Report {
    Report {
        error: Some(error),
        ..Report::new(ReportStatus::Failed)
    }
}

/// Ends the step as `failed` with nothing outstanding (evaluation threw, or a job did).
fn finish_failed(_guest: &mut Guest, error: String) -> i32 {
    let mut report = failed_report(error);
    take_outbox(&mut report);
    set_report(&report)
}

/// Moves the step's requests, output and overflow flags into `report`, emptying the outbox for
/// the next step.
fn take_outbox(report: &mut Report) {
    OUTBOX.with(|o| {
        let mut o = o.borrow_mut();
        report.requests = std::mem::take(&mut o.requests);
        report.output = std::mem::take(&mut o.output);
        report.output_overflow = o.output_overflow;
        report.request_overflow = o.request_overflow;
        o.output_bytes = 0;
        o.output_overflow = false;
        o.request_overflow = false;
    })
}

/// The text of QuickJS's out-of-memory error, as an uncaught error is reported
/// (docs/contract/lifecycle.md#s5-7).
const OUT_OF_MEMORY: &str = "InternalError: out of memory";

/// The error text of an uncaught exception `ex` (the prelude's `formatError`). A `null` thrown
/// in a step where the heap refused an allocation is QuickJS's own out-of-memory error that it
/// could not build ([`heap::refused_this_step`]), reported as that error (without a backtrace,
/// which could not be built either).
fn format_error<'js>(ctx: &Ctx<'js>, internals: &Object<'js>, ex: Value<'js>) -> String {
    if ex.is_null() && heap::refused_this_step() {
        return OUT_OF_MEMORY.to_string();
    }
    let formatted = internals
        .get::<_, Function>("formatError")
        .and_then(|f| f.call::<_, String>((ex,)));
    match formatted {
        Ok(s) => s,
        Err(rquickjs::Error::Exception) => {
            // Formatting itself failed (e.g. interrupted): report what QuickJS left behind.
            let again = ctx.catch();
            match again.as_exception() {
                Some(e) => format!(
                    "InternalError: {}",
                    e.message().unwrap_or_else(|| "exception".into())
                ),
                None => "InternalError: unprintable exception".to_string(),
            }
        }
        Err(e) => format!("InternalError: {e}"),
    }
}
