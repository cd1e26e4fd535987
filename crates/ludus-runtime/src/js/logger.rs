//! The `logger` every JS callback gets: Nakama's `debug`, `info`, `warn`,
//! `error` with printf-style formats, `withField`, `withFields` and
//! `getFields`. The object is plain JS over one Rust function that writes
//! the line through `tracing`, with the module file and line it was called
//! from (read off the JS stack).

use rquickjs::{Ctx, Function, Object};

/// The logger's JS side, evaluated once per context; it answers a function
/// that takes the native writer and makes the root logger. Its frames are
/// skipped when the caller's line is looked up (`eval_script`).
const PRELUDE: &str = r#"(function (write) {
  function show(v) {
    if (typeof v === "string") return v;
    if (v !== null && typeof v === "object") { try { return JSON.stringify(v); } catch (e) { return String(v); } }
    return String(v);
  }
  function format(f, args) {
    var i = 0;
    var text = String(f).replace(/%[sdvifjqxX%]/g, function (m) {
      if (m === "%%") return "%";
      return i < args.length ? show(args[i++]) : m;
    });
    for (; i < args.length; i++) text += " " + show(args[i]);
    return text;
  }
  function Logger(fields) { this.fields = fields; }
  function level(n) {
    return function (f) {
      var args = Array.prototype.slice.call(arguments, 1);
      write(n, format(f, args), JSON.stringify(this.fields), new Error().stack || "");
    };
  }
  Logger.prototype.debug = level(0);
  Logger.prototype.info = level(1);
  Logger.prototype.warn = level(2);
  Logger.prototype.error = level(3);
  Logger.prototype.withField = function (key, value) {
    var f = Object.assign({}, this.fields); f[String(key)] = value; return new Logger(f);
  };
  Logger.prototype.withFields = function (more) {
    return new Logger(Object.assign({}, this.fields, more));
  };
  Logger.prototype.getFields = function () { return this.fields; };
  Object.freeze(Logger.prototype);
  return new Logger({});
})"#;

/// Makes the root logger of a context.
pub(super) fn root_logger<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Object<'js>> {
    let make: Function = ctx.eval(PRELUDE)?;
    let write = Function::new(
        ctx.clone(),
        |level: i32, message: String, fields: String, stack: String| {
            let (file, line) = caller(&stack);
            let fields = if fields == "{}" { "" } else { fields.as_str() };
            match level {
                0 => tracing::debug!(target: "ludus::js", file, line, fields, "{message}"),
                1 => tracing::info!(target: "ludus::js", file, line, fields, "{message}"),
                2 => tracing::warn!(target: "ludus::js", file, line, fields, "{message}"),
                _ => tracing::error!(target: "ludus::js", file, line, fields, "{message}"),
            }
        },
    )?;
    make.call((write,))
}

/// The module file and line of the first stack frame outside the logger,
/// from QuickJS's `    at name (file:line:column)` lines.
pub(super) fn caller(stack: &str) -> (&str, u32) {
    for frame in stack.lines() {
        let Some(open) = frame.rfind('(') else {
            continue;
        };
        let place = frame[open + 1..].trim_end_matches(')');
        if place.starts_with("eval_script") || place == "native" {
            continue;
        }
        let mut parts = place.rsplitn(3, ':');
        let (Some(a), Some(b)) = (parts.next(), parts.next()) else {
            continue;
        };
        // `file:line:column` or `file:line`.
        return match parts.next() {
            Some(file) => (file, b.parse().unwrap_or(0)),
            None => (b, a.parse().unwrap_or(0)),
        };
    }
    ("", 0)
}

#[cfg(test)]
mod tests {
    use super::caller;

    #[test]
    fn caller_skips_the_loggers_own_frames() {
        let stack = "    at <anonymous> (eval_script:21:13)\n    at rpcHello (index.js:7:5)\n    at <anonymous> (native)\n";
        assert_eq!(caller(stack), ("index.js", 7));
        assert_eq!(caller("    at f (index.js:3)\n"), ("index.js", 3));
        assert_eq!(caller(""), ("", 0));
    }
}
