// Regenerates ../golden/<model>/<corpus>.jsonl with the reference implementation,
// native Hugging Face tokenizers 0.22.2 (npm @anush008/tokenizers@0.6.0). One line
// per document: {"plain": ids without special tokens, "special": ids with them,
// "decoded": decode(plain, skip_special_tokens=false)}.
//
//   cd tokenizer/testdata/reference && npm ci && node gen-golden.mjs
//
// The Llama 3.1 tokenizer is read from $RIVAL_SHARED_DIR/tokenizers/llama-3.1 (by
// default /work/shared, i.e. ../shared next to the repository); it is skipped with
// a message when absent.
import { createRequire } from 'node:module';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const require = createRequire(import.meta.url);
const { Tokenizer } = require('@anush008/tokenizers');

const here = path.dirname(fileURLToPath(import.meta.url));
const testdata = path.join(here, '..');
const repoRoot = path.join(testdata, '..', '..');
const shared = process.env.RIVAL_SHARED_DIR || path.join(repoRoot, '..', 'shared');

const models = {
  'llama-3.1': path.join(shared, 'tokenizers', 'llama-3.1', 'tokenizer.json'),
  'qwen-2.5': path.join(testdata, 'qwen-2.5', 'tokenizer.json'),
  'mistral-7b-v0.1': path.join(testdata, 'mistral-7b-v0.1', 'tokenizer.json'),
};

// readCorpus returns the documents of one corpus file as the reference sees them:
// JSON lines are parsed by JSON.parse; .txt files are raw lines decoded as UTF-8
// (each maximal ill-formed subpart becomes U+FFFD).
function readCorpus(file) {
  const raw = readFileSync(file);
  if (file.endsWith('.txt')) {
    const docs = [];
    let start = 0;
    for (let i = 0; i < raw.length; i++) {
      if (raw[i] === 0x0a) {
        docs.push(new TextDecoder('utf-8').decode(raw.subarray(start, i)));
        start = i + 1;
      }
    }
    return docs;
  }
  return raw.toString('utf8').split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l).text);
}

const corpusDir = path.join(testdata, 'corpora');
const corpora = readdirSync(corpusDir).filter((f) => f.endsWith('.jsonl') || f.endsWith('.txt')).sort();

for (const [name, file] of Object.entries(models)) {
  if (!existsSync(file)) {
    console.error(`skip ${name}: ${file} not found (put the Llama 3.1 tokenizer.json there or set RIVAL_SHARED_DIR)`);
    continue;
  }
  const tok = Tokenizer.fromFile(file);
  const outDir = path.join(testdata, 'golden', name);
  mkdirSync(outDir, { recursive: true });
  for (const corpus of corpora) {
    const docs = readCorpus(path.join(corpusDir, corpus));
    const plain = await tok.encodeBatch(docs, { addSpecialTokens: false });
    const special = await tok.encodeBatch(docs, { addSpecialTokens: true });
    const lines = [];
    for (let i = 0; i < docs.length; i++) {
      const ids = plain[i].getIds();
      const decoded = await tok.decode(ids, false);
      lines.push(JSON.stringify({ plain: ids, special: special[i].getIds(), decoded }));
    }
    const base = corpus.replace(/\.(jsonl|txt)$/, '');
    writeFileSync(path.join(outDir, `${base}.jsonl`), lines.join('\n') + '\n');
  }
  console.log(`${name}: ${corpora.length} corpora, vocab ${tok.getVocabSize(true)}`);
}
