// Times the reference (Hugging Face tokenizers 0.22.2, native) on the
// hand-written corpora (prose, code, multilingual), document by document with
// encodeBatch, as BenchmarkEncodeCorpus times the Go tokenizer.
//
//   RAYON_NUM_THREADS=1 node bench-corpora.mjs
import { createRequire } from 'node:module';
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';

const require = createRequire(import.meta.url);
const { Tokenizer } = require('@anush008/tokenizers');

const here = import.meta.dirname;
const shared = process.env.RIVAL_SHARED_DIR || path.join(here, '..', '..', '..', '..', 'shared');
const models = {
  'llama-3.1': path.join(shared, 'tokenizers', 'llama-3.1', 'tokenizer.json'),
  'qwen-2.5': path.join(here, '..', 'qwen-2.5', 'tokenizer.json'),
  'mistral-7b-v0.1': path.join(here, '..', 'mistral-7b-v0.1', 'tokenizer.json'),
};
const minSeconds = Number(process.env.BENCH_SECONDS || 2);

for (const [model, file] of Object.entries(models)) {
  if (!existsSync(file)) { console.log(`${model}: ${file} not found, skipped`); continue; }
  const hf = Tokenizer.fromFile(file);
  for (const corpus of ['prose', 'code', 'multilingual']) {
    const docs = readFileSync(path.join(here, '..', 'corpora', corpus + '.jsonl'), 'utf8')
      .split('\n').filter((l) => l !== '').map((l) => JSON.parse(l).text);
    const bytes = docs.reduce((n, d) => n + Buffer.byteLength(d), 0);
    const run = async () => (await hf.encodeBatch(docs, { addSpecialTokens: false })).length;
    await run();
    const t0 = process.hrtime.bigint();
    const c0 = process.cpuUsage();
    let reps = 0;
    while (Number(process.hrtime.bigint() - t0) / 1e9 < minSeconds) { await run(); reps++; }
    const wall = Number(process.hrtime.bigint() - t0) / 1e9;
    const c = process.cpuUsage(c0);
    const cpu = (c.user + c.system) / 1e6;
    console.log(`${(model + '/' + corpus).padEnd(30)} ${(bytes * reps / wall / 1e6).toFixed(2).padStart(7)} MB/s ${(bytes * reps / cpu / 1e6).toFixed(2).padStart(7)} MB/cpu-s`);
  }
}
