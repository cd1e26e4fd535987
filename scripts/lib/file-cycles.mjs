// Finds circles of imports between the files of one crate.
//
// Usage: node scripts/lib/file-cycles.mjs CRATE_DIR...
//
// For each crate root (src/lib.rs, src/main.rs) it follows the `mod x;`
// declarations to the crate's files, reads every path a file names through
// `crate::`, `super::` or `self::` (in `use` items and in code), resolves it
// to the file that defines the item, and reports every strongly connected
// set of two or more files with one import per edge of the circle. A `pub
// use` re-export is the crate's facade, not a dependency of the file that
// holds it: a path through it is followed to the file that defines the item.
// `mod x;` declarations are not dependencies either (a parent owns its
// children; a child that names its parent's items depends on it).
//
// It prints nothing and exits 0 when no crate has a circle; else it prints
// each circle and exits 1. It parses with regular expressions over text
// stripped of comments, strings and character literals: enough for this
// codebase's style, checked by its own test in scripts/check-invariants.

import { readFileSync, existsSync } from "node:fs";
import { join, dirname, basename, relative } from "node:path";

// Blanks comments, string literals (plain, byte and raw) and character
// literals, keeping every newline so offsets still map to lines.
export function strip(src) {
  let out = "";
  let i = 0;
  const n = src.length;
  const blank = (s) => s.replace(/[^\n]/g, " ");
  while (i < n) {
    const c = src[i];
    const next = src[i + 1];
    if (c === "/" && next === "/") {
      let j = src.indexOf("\n", i);
      if (j < 0) j = n;
      out += blank(src.slice(i, j));
      i = j;
    } else if (c === "/" && next === "*") {
      let depth = 1;
      let j = i + 2;
      while (j < n && depth > 0) {
        if (src[j] === "/" && src[j + 1] === "*") { depth++; j += 2; }
        else if (src[j] === "*" && src[j + 1] === "/") { depth--; j += 2; }
        else j++;
      }
      out += blank(src.slice(i, j));
      i = j;
    } else if ((c === "r" || (c === "b" && next === "r")) && /^b?r#*"/.test(src.slice(i, i + 40)) && !/\w/.test(src[i - 1] || "")) {
      const m = /^b?r(#*)"/.exec(src.slice(i, i + 40));
      const close = '"' + m[1];
      const j = src.indexOf(close, i + m[0].length);
      const end = j < 0 ? n : j + close.length;
      out += '""' + blank(src.slice(i + 2, end));
      i = end;
    } else if (c === '"' || (c === "b" && next === '"' && !/\w/.test(src[i - 1] || ""))) {
      let j = c === "b" ? i + 2 : i + 1;
      while (j < n && src[j] !== '"') j += src[j] === "\\" ? 2 : 1;
      out += '""' + blank(src.slice(i + 2, j + 1));
      i = j + 1;
    } else if (c === "'") {
      const m = /^'(?:\\u\{[0-9a-fA-F]+\}|\\x[0-9a-fA-F]{2}|\\.|[^\\'])'/.exec(src.slice(i, i + 16));
      if (m) {
        out += blank(m[0]);
        i += m[0].length;
      } else {
        out += c;
        i++;
      }
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

// Whether the `mod` item at `offset` is compiled for tests only: its
// attributes (the text since the previous item) hold `#[cfg(test)]`.
function testOnly(text, offset) {
  const before = text.slice(Math.max(0, offset - 300), offset);
  const attrs = /((?:#\[[^\]]*\]\s*|pub(?:\([^)]*\))?\s*)*)$/.exec(before)[1];
  return /#\[cfg\(test\)\]/.test(attrs);
}

function matchingBrace(text, open) {
  let depth = 0;
  for (let j = open; j < text.length; j++) {
    if (text[j] === "{") depth++;
    else if (text[j] === "}" && --depth === 0) return j;
  }
  return text.length;
}

// Expands a `use` tree (`a::{b, c::{d as e, *}}`) into [path, alias] pairs.
function expandUse(tree) {
  tree = tree.replace(/\s+/g, " ").replace(/ ?(::|\{|\}|,) ?/g, "$1").trim();
  const out = [];
  const walk = (prefix, t) => {
    if (t.endsWith("}") && t.includes("{")) {
      const k = t.indexOf("{");
      const head = t.slice(0, k);
      const inner = t.slice(k + 1, -1);
      let depth = 0;
      let start = 0;
      const parts = [];
      for (let j = 0; j <= inner.length; j++) {
        const ch = inner[j];
        if (ch === "{") depth++;
        else if (ch === "}") depth--;
        else if ((ch === "," && depth === 0) || j === inner.length) {
          if (j > start) parts.push(inner.slice(start, j));
          start = j + 1;
        }
      }
      for (const p of parts) walk(prefix + head, p);
      return;
    }
    let alias = null;
    let path = t;
    const as = /^(.*) as (\w+)$/.exec(t);
    if (as) { path = as[1]; alias = as[2]; }
    const full = (prefix + path).replace(/::self$/, "");
    const segs = full.split("::").filter(Boolean);
    out.push([segs, alias ?? segs[segs.length - 1]]);
  };
  walk("", tree);
  return out;
}

// One crate root's module tree: module key ("a::b") -> { file, path: [...] }.
function moduleTree(rootFile) {
  const modules = new Map();
  const visit = (file, path) => {
    const key = path.join("::");
    if (modules.has(key)) return;
    const text = strip(readFileSync(file, "utf8"));
    modules.set(key, { file, path, text });
    const isDirOwner = ["lib.rs", "main.rs", "mod.rs"].includes(basename(file));
    const dir = isDirOwner ? dirname(file) : join(dirname(file), basename(file, ".rs"));
    for (const m of text.matchAll(/\bmod\s+(\w+)\s*;/g)) {
      if (testOnly(text, m.index)) continue;
      const name = m[1];
      const a = join(dir, name + ".rs");
      const b = join(dir, name, "mod.rs");
      const child = existsSync(a) ? a : existsSync(b) ? b : null;
      if (child) visit(child, [...path, name]);
    }
  };
  visit(rootFile, []);
  return modules;
}

function analyzeRoot(rootFile) {
  const modules = moduleTree(rootFile);
  // Inline modules of each file: { name, start, end, path } (path absolute).
  const inline = new Map();
  for (const [key, mod] of modules) {
    const spans = [];
    for (const m of mod.text.matchAll(/\bmod\s+(\w+)\s*\{/g)) {
      const open = m.index + m[0].length - 1;
      spans.push({ name: m[1], start: open, end: matchingBrace(mod.text, open), test: testOnly(mod.text, m.index) });
    }
    // An inline module's path: the file's path plus every enclosing span.
    for (const s of spans) {
      const outer = spans.filter((o) => o.start < s.start && o.end > s.end).sort((x, y) => x.start - y.start);
      s.path = [...mod.path, ...outer.map((o) => o.name), s.name];
      modules.set(s.path.join("::"), { file: mod.file, path: s.path, text: mod.text.slice(s.start, s.end), inlineOf: key });
    }
    inline.set(key, spans);
  }
  const fileOf = (path) => modules.get(path.join("::"))?.file;
  const modulePathAt = (mod, offset) => {
    const spans = (inline.get(mod.path.join("::")) || []).filter((s) => s.start < offset && s.end > offset);
    spans.sort((x, y) => y.start - x.start);
    return spans.length ? spans[0].path : mod.path;
  };
  // Re-exports of a module: name -> absolute path, and its glob re-exports.
  const reexports = new Map();
  const reexportsOf = (path) => {
    const key = path.join("::");
    if (reexports.has(key)) return reexports.get(key);
    const mod = modules.get(key);
    const named = new Map();
    const globs = [];
    if (mod) {
      for (const m of mod.text.matchAll(/\bpub(?:\([^)]*\))?\s+use\s+([^;]+);/g)) {
        for (const [segs, alias] of expandUse(m[1])) {
          const abs = absolute(segs, path);
          if (!abs) {
            if (alias !== "*") named.set(alias, null); // another crate's item
            continue;
          }
          if (alias === "*") globs.push(abs.slice(0, -1));
          else named.set(alias, abs);
        }
      }
    }
    const r = { named, globs };
    reexports.set(key, r);
    return r;
  };
  // Makes a path absolute from module `at`; null when it leaves the crate.
  function absolute(segs, at) {
    const s = [...segs];
    let base;
    if (s[0] === "crate") { base = []; s.shift(); }
    else if (s[0] === "self") { base = [...at]; s.shift(); }
    else if (s[0] === "super") {
      base = [...at];
      while (s[0] === "super") { base.pop(); s.shift(); }
    } else if (modules.has([...at, s[0]].join("::"))) base = [...at];
    else return null;
    return [...base, ...s];
  }
  const defines = (text, name) =>
    new RegExp(`\\b(?:fn|struct|enum|trait|type|const|static|union|macro_rules!)\\s+${name}\\b`).test(text);
  // The file that defines the item an absolute path names (or the module's
  // file when the path ends at a module).
  function resolve(abs, depth = 0) {
    let i = 0;
    while (i < abs.length && modules.has(abs.slice(0, i + 1).join("::"))) i++;
    const modPath = abs.slice(0, i);
    if (i === abs.length || depth > 8) return { file: fileOf(modPath), module: true, path: modPath };
    const name = abs[i];
    const mod = modules.get(modPath.join("::"));
    const { named, globs } = reexportsOf(modPath);
    if (named.get(name) === null) return { file: null, module: false, path: modPath };
    if (named.has(name)) return resolve([...named.get(name), ...abs.slice(i + 1)], depth + 1);
    if (mod && !defines(mod.text, name)) {
      for (const g of globs) {
        const r = resolve([...g, ...abs.slice(i)], depth + 1);
        if (r.file && r.file !== mod.file) return r;
      }
    }
    return { file: mod?.file, module: false, path: modPath };
  }

  const edges = new Map(); // file -> Map(file -> example)
  const addEdge = (from, to, example) => {
    if (!from || !to || from === to) return;
    if (!edges.has(from)) edges.set(from, new Map());
    const m = edges.get(from);
    if (!m.has(to)) m.set(to, example);
  };
  for (const [, mod] of modules) {
    if (mod.inlineOf) continue;
    const text = mod.text;
    const lineAt = (off) => text.slice(0, off).split("\n").length;
    const aliases = new Map(); // name -> absolute module path (per file)
    const tests = (inline.get(mod.path.join("::")) || []).filter((sp) => sp.test);
    const inTest = (off) => tests.some((sp) => off > sp.start && off < sp.end);
    const useSpans = [];
    for (const m of text.matchAll(/(\bpub(?:\([^)]*\))?\s+)?\buse\s+([^;]+);/g)) {
      useSpans.push([m.index, m.index + m[0].length]);
      if (m[1] || inTest(m.index)) continue; // a re-export is not a dependency of this file
      const at = modulePathAt(mod, m.index);
      for (const [segs, alias] of expandUse(m[2])) {
        const abs = absolute(segs, at);
        if (!abs) continue;
        if (alias === "*") {
          addEdge(mod.file, resolve(abs.slice(0, -1)).file, `line ${lineAt(m.index)}: use ${segs.join("::")}`);
          continue;
        }
        const r = resolve(abs);
        if (r.module) aliases.set(alias, r.path);
        else addEdge(mod.file, r.file, `line ${lineAt(m.index)}: use ${segs.join("::")}`);
      }
    }
    const inUse = (off) => useSpans.some(([a, b]) => off >= a && off < b);
    for (const m of text.matchAll(/(?<![$\w])(crate|super|self)((?:::\w+)+)/g)) {
      if (inUse(m.index) || inTest(m.index)) continue;
      const at = modulePathAt(mod, m.index);
      const abs = absolute([m[1], ...m[2].split("::").filter(Boolean)], at);
      if (abs) addEdge(mod.file, resolve(abs).file, `line ${lineAt(m.index)}: ${m[0]}`);
    }
    for (const [alias, path] of aliases) {
      for (const m of text.matchAll(new RegExp(`(?<![:\\w])${alias}((?:::\\w+)+)`, "g"))) {
        if (inUse(m.index) || inTest(m.index)) continue;
        const r = resolve([...path, ...m[1].split("::").filter(Boolean)]);
        addEdge(mod.file, r.file, `line ${lineAt(m.index)}: ${alias}${m[1]}`);
      }
    }
  }
  return edges;
}

// Tarjan's strongly connected components.
function components(edges) {
  const nodes = new Set([...edges.keys(), ...[...edges.values()].flatMap((m) => [...m.keys()])]);
  let index = 0;
  const idx = new Map(), low = new Map(), onStack = new Set(), stack = [], out = [];
  const strong = (v) => {
    idx.set(v, index); low.set(v, index); index++;
    stack.push(v); onStack.add(v);
    for (const w of edges.get(v)?.keys() ?? []) {
      if (!idx.has(w)) { strong(w); low.set(v, Math.min(low.get(v), low.get(w))); }
      else if (onStack.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const c = [];
      let w;
      do { w = stack.pop(); onStack.delete(w); c.push(w); } while (w !== v);
      if (c.length > 1) out.push(c.sort());
    }
  };
  for (const v of nodes) if (!idx.has(v)) strong(v);
  return out;
}

export function cyclesOf(crateDir) {
  const found = [];
  for (const root of ["src/lib.rs", "src/main.rs"]) {
    const file = join(crateDir, root);
    if (!existsSync(file)) continue;
    const edges = analyzeRoot(file);
    for (const c of components(edges)) {
      const inside = new Set(c);
      const lines = [];
      for (const f of c) {
        for (const [to, ex] of edges.get(f) ?? []) {
          if (inside.has(to)) lines.push(`${relative(crateDir, f)} -> ${relative(crateDir, to)}  (${ex})`);
        }
      }
      found.push({ root, files: c.map((f) => relative(crateDir, f)), lines });
    }
  }
  return found;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  let bad = 0;
  for (const dir of process.argv.slice(2)) {
    for (const c of cyclesOf(dir)) {
      bad++;
      console.log(`circle in ${basename(dir)} (${c.root}): ${c.files.length} files: ${c.files.join(", ")}`);
      for (const l of c.lines) console.log(`    ${l}`);
    }
  }
  process.exit(bad ? 1 : 0);
}
