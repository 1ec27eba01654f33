// Times the reference (Hugging Face tokenizers, npm binding) on one text in
// one encode call, to tell its per-call cost from its tokenizing speed.
//
//   RAYON_NUM_THREADS=1 node one-text.mjs TOKENIZER.json TEXT
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
const require = createRequire(import.meta.url);
const { Tokenizer } = require('@anush008/tokenizers');
const text = readFileSync(process.argv[3], 'utf8');
const hf = Tokenizer.fromFile(process.argv[2]);
const bytes = Buffer.byteLength(text);
await hf.encode(text, null, { addSpecialTokens: false });
const c0 = process.cpuUsage(); const t0 = process.hrtime.bigint();
const reps = 5; let n = 0;
for (let i = 0; i < reps; i++) n = (await hf.encode(text, null, { addSpecialTokens: false })).getIds().length;
const c = process.cpuUsage(c0); const cpu = (c.user + c.system) / 1e6 / reps;
const wall = Number(process.hrtime.bigint() - t0) / 1e9 / reps;
console.log(`${process.argv[2].split('/').slice(-2)[0]}: one encode of ${bytes} B, ${n} tokens: ${(bytes / cpu / 1e6).toFixed(2)} MB/cpu-s, ${(bytes / wall / 1e6).toFixed(2)} MB/s`);
