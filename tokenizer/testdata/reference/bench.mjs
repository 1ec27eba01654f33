// Times the reference (Hugging Face tokenizers 0.22.2, native) and tiktoken (npm,
// WebAssembly build of OpenAI's tiktoken, with ranks built from the same
// tokenizer.json) on the benchmark text: Newton's Opticks from GOROOT, cut into
// paragraphs at blank lines exactly as the Go benchmark does. Also checks that
// tiktoken produces the reference's ids, so the comparison is like for like.
//
//   RAYON_NUM_THREADS=1 node bench.mjs [tokenizer.json] [text file]
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';

const require = createRequire(import.meta.url);
const { Tokenizer } = require('@anush008/tokenizers');
const { Tiktoken } = require('tiktoken/lite');

const shared = process.env.RIVAL_SHARED_DIR || path.join(import.meta.dirname, '..', '..', '..', '..', 'shared');
const tokFile = process.argv[2] || path.join(shared, 'tokenizers', 'llama-3.1', 'tokenizer.json');
const goroot = execFileSync('go', ['env', 'GOROOT']).toString().trim();
const textFile = process.argv[3] || path.join(goroot, 'src', 'testdata', 'Isaac.Newton-Opticks.txt');
const text = readFileSync(textFile, 'utf8');
const bytes = Buffer.byteLength(text);

const docs = [];
let start = 0;
for (let i = 0; i + 1 < text.length; i++) {
  if (text[i] === '\n' && text[i + 1] === '\n') {
    docs.push(text.slice(start, i + 2));
    start = i + 2;
    i++;
  }
}
docs.push(text.slice(start));

// report prints wall-clock MB/s and MB per CPU-second (user+system of this
// process): the machine is shared, and CPU time is not diluted by other load.
function report(label, wallS, cpuS, tokens) {
  console.log(`${label.padEnd(40)} ${(bytes / wallS / 1e6).toFixed(2).padStart(7)} MB/s ${(bytes / cpuS / 1e6).toFixed(2).padStart(7)} MB/cpu-s ${(tokens / wallS / 1e6).toFixed(3).padStart(7)} M tokens/s`);
}

async function time(label, fn, reps) {
  await fn(); // warm up
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  let tokens = 0;
  for (let r = 0; r < reps; r++) tokens += await fn();
  const wall = Number(process.hrtime.bigint() - t0) / 1e9 / reps;
  const c = process.cpuUsage(c0);
  report(label, wall, (c.user + c.system) / 1e6 / reps, tokens / reps);
}

// The reference.
let t0 = process.hrtime.bigint();
const hf = Tokenizer.fromFile(tokFile);
console.log(`reference load: ${(Number(process.hrtime.bigint() - t0) / 1e6).toFixed(0)} ms; ${bytes} bytes, ${docs.length} documents; RAYON_NUM_THREADS=${process.env.RAYON_NUM_THREADS ?? '(unset)'}`);
const hfBatch = async () => (await hf.encodeBatch(docs, { addSpecialTokens: false })).reduce((n, e) => n + e.getIds().length, 0);
await time('hf tokenizers encodeBatch', hfBatch, 3);

// tiktoken with ranks built from the same vocabulary (rank = id).
const spec = JSON.parse(readFileSync(tokFile, 'utf8'));
const b2u = [];
let n = 0;
for (let b = 0; b < 256; b++) {
  const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  b2u[b] = printable ? b : 256 + n++;
}
const u2b = new Map(b2u.map((u, b) => [u, b]));
const lines = [];
for (const [tok, id] of Object.entries(spec.model.vocab)) {
  const raw = Buffer.from([...tok].map((c) => u2b.get(c.codePointAt(0))));
  lines.push(`${raw.toString('base64')} ${id}`);
}
const special = Object.fromEntries(spec.added_tokens.map((a) => [a.content, a.id]));
const pat = spec.pre_tokenizer.pretokenizers[0].pattern.Regex;
t0 = process.hrtime.bigint();
const tt = new Tiktoken(lines.join('\n'), special, pat);
console.log(`tiktoken load: ${(Number(process.hrtime.bigint() - t0) / 1e6).toFixed(0)} ms`);

// Same ids as the reference? (tiktoken has no ignore_merges, so a few words may differ.)
const ref = (await hf.encodeBatch(docs, { addSpecialTokens: false })).map((e) => e.getIds());
let same = 0;
docs.forEach((d, i) => { const a = tt.encode(d, [], []); if (a.length === ref[i].length && a.every((x, j) => x === ref[i][j])) same++; });
console.log(`tiktoken matches the reference on ${same}/${docs.length} documents`);
await time('tiktoken encode (per document)', () => docs.reduce((k, d) => k + tt.encode(d, [], []).length, 0), 3);
await time('tiktoken encode_ordinary (per document)', () => docs.reduce((k, d) => k + tt.encode_ordinary(d).length, 0), 3);
tt.free();
