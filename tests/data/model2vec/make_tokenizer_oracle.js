// Writes tokenizer_oracle.txt: token ids from the reference Hugging Face tokenizers library (its
// Node binding, npm package "tokenizers" 0.23.2, which wraps the same Rust crate as the Python one)
// for many texts under several tokenizer configurations. tests/core/model2vec_test.cc checks
// kplab's HfTokenizer against it.
//
//   mkdir /tmp/tk && cd /tmp/tk && npm install tokenizers@0.23.2
//   NODE_PATH=/tmp/tk/node_modules node tests/data/model2vec/make_tokenizer_oracle.js \
//       ../shared/models/model2vec-fixtures tests/data/model2vec
//
// Format (line-based, so the C++ test needs no JSON parser; the configuration fields contain no tab
// or newline):
//   T <hex of the text's UTF-8 bytes>                          one line per text, first
//   C <name> TAB <base> TAB <added_tokens> TAB <normalizer> TAB <pre_tokenizer>
//   I <id> <id> ...                                            the ids of each text, in order
// base is "wordpiece" or "unigram" (the test-model-float32 / test-model-vocab-quantized
// tokenizer.json of the fixtures) or "file:NAME" (a file beside this script). When the three
// fields are "-" the base file is used as it is; otherwise the tokenizer is the JSON text
//   {"version":"1.0","truncation":null,"padding":null,"added_tokens":A,"normalizer":N,
//    "pre_tokenizer":P,"post_processor":null,"decoder":null,"model":M}
// with A, N, P the fields given and M the base file's "model" value copied as text (see modelText).
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');

const fixtures = process.argv[2];
const outDir = process.argv[3];

function readBase(base) {
  if (base === 'wordpiece') return fs.readFileSync(path.join(fixtures, 'test-model-float32/tokenizer.json'), 'utf8');
  if (base === 'unigram') return fs.readFileSync(path.join(fixtures, 'test-model-vocab-quantized/tokenizer.json'), 'utf8');
  return fs.readFileSync(path.join(outDir, base.slice(5)), 'utf8');
}

// The text of the "model" value: from the '{' after the first `"model":` (optional spaces between)
// to just before the last '}' of the file (the model is the last key of these files).
function modelText(json) {
  const m = /"model":\s*\{/.exec(json);
  const end = json.lastIndexOf('}');
  if (!m || end < m.index) throw new Error('no "model" key at the end');
  return json.slice(m.index + m[0].length - 1, end);
}

function splice(base, a, n, p) {
  return '{"version":"1.0","truncation":null,"padding":null,"added_tokens":' + a + ',"normalizer":' + n +
         ',"pre_tokenizer":' + p + ',"post_processor":null,"decoder":null,"model":' + modelText(readBase(base)) + '}';
}

// Deterministic random texts from a pool that exercises every character class the pipeline cares
// about.
let seed = 20240917;
function rand() {  // mulberry32
  seed |= 0; seed = seed + 0x6D2B79F5 | 0;
  let t = Math.imul(seed ^ seed >>> 15, 1 | seed);
  t = t + Math.imul(t ^ t >>> 7, 61 | t) ^ t;
  return ((t ^ t >>> 14) >>> 0) / 4294967296;
}
const pool = [
  ...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789',
  ...'      ', ...'.,;:!?-_\'"()[]{}#$%&*+/<=>@\\^`|~', '\t', '\n', '\r',
  'é', 'É', 'è', 'ü', 'Ü', 'ñ', 'ç', 'ø', 'å', 'ß', 'İ', 'ı', 'ﬁ', 'Σ', 'σ', 'ς', 'Ω', 'д', 'Ж',
  '中', '文', '日', '本', 'タ', 'ワ', '한', '국', 'ا', 'ب', 'अ', 'ก', '😀', '👍🏽', '①', '²', 'Ⅻ', 'Ａ', 'ｂ',
  '…', '—', '–', '«', '»', '¿', '¡', '·', '‰', '€', '£', '\u00a0', '\u2003', '\u3000', '\u200b', '\u00ad',
  '\u0301', '\u0308', '\u20dd', '\u0903', '\u0001', '\u007f', '\u0085', '\ufffd', '\ue000', '\u0378',
  '\u2028', '\ufeff', '\u2581', '\u200d', 'ǅ', 'ǲ', 'ﬀ', 'Ⓐ', '℃', '½', '٣', '\u1680', '[CLS]', '[UNK]',
  '[SEP]', '[MASK]', '[PAD]', '<unk>',
];
function randomText() {
  const n = 1 + Math.floor(rand() * 14);
  let s = '';
  for (let i = 0; i < n; ++i) {
    const r = rand();
    if (r < 0.35) s += ' ';
    if (r < 0.7) {  // a plausible word
      const words = ['neural', 'network', 'graph', 'learning', 'hello', 'world', 'state', 'art',
                     'keyphrase', 'extraction', 'Deep', 'CAFÉ', 'naïve', 'über', 'x86', 'e-mail'];
      s += words[Math.floor(rand() * words.length)];
    } else {
      s += pool[Math.floor(rand() * pool.length)];
    }
  }
  return s;
}

const fixed = [
  'hello world', 'hello', 'Hello World', 'HELLO WORLD!', '', ' ', '   ', 'a  b', ' leading and trailing ',
  'neural networks', 'support vector machine', 'state-of-the-art', 'e-mail', 'U.S.', 'C++', '3D printing',
  'COVID-19', 'x86_64', "don't", "O'Reilly", "rock 'n' roll", '#hashtag @user', 'http://example.com/a?b=c',
  '50% off $100', 'unaffable', 'antidisestablishmentarianism', 'pneumonoultramicroscopicsilicovolcanoconiosis',
  'Café Münster', 'naïve Bayes', 'Ångström', 'Straße', 'İstanbul', 'ΣΊΣΥΦΟΣ', 'Москва', '中文分词',
  '東京タワー', '한국어', 'emoji 😀 test', 'ﬁne', '①②', 'x²', 'Ⅻ', 'ＡＢＣ ｄｅｆ', 'a…b', 'a—b', '«quoted»',
  '¿qué?', '¡hola!', 'non\u00a0breaking', 'zero\u200bwidth', 'soft\u00adhyphen', 'tab\tnew\nline\rend',
  '\u0001ctrl\u007f', 'bad\ufffdchar', '\ue000 private', '\u0378 unassigned', 'combining e\u0301',
  'a'.repeat(99), 'a'.repeat(100), 'a'.repeat(101), 'b'.repeat(150), '[CLS] hello [SEP]', '[UNK]',
  'hello[MASK]world', 'x[CLS]y', 'Hello [CLS]', '  [SEP]  ', '[cls]', 'graph-based approach', 'k-means',
  'ǅungla ǲ', 'ς σ Σ', 'I\u0307', '\u2581hello', 'hello\u2581world', '\u3000full\u3000width\u3000',
  'line\u2028sep', 'bom\ufeffx', 'nel\u0085x', 'ogham\u1680space', 'x\u200dy', 'Ⓐⓑ', '℃ ½ ٣',
  '12345 678', '3.14159', 'v2.0-rc1', 'a1b2c3', '١٢٣ arabic digits', 'ⅷ roman',
];
const texts = fixed.slice();
for (let i = 0; i < 200; ++i) texts.push(randomText());

const wpNorm = '{"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,"strip_accents":null,"lowercase":true}';
const wpAdded = '[{"id":0,"content":"[PAD]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},{"id":1,"content":"[UNK]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},{"id":2,"content":"[CLS]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},{"id":3,"content":"[SEP]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},{"id":4,"content":"[MASK]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}]';
const ugAdded = '[{"id":0,"content":"[PAD]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},{"id":1,"content":"[UNK]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}]';
const bert = (o) => JSON.stringify(Object.assign({type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true}, o));
const behaviours = ['Removed', 'Isolated', 'MergedWithPrevious', 'MergedWithNext', 'Contiguous'];

const configs = [
  {name: 'wordpiece fixture', base: 'wordpiece'},
  {name: 'unigram fixture', base: 'unigram'},
  {name: 'byte fallback', base: 'file:unigram_byte_fallback.json'},
  {name: 'wordlevel', base: 'file:wordlevel_tokenizer.json'},
  {name: 'bert cased', base: 'wordpiece', a: wpAdded, n: bert({lowercase: false}), p: '{"type":"BertPreTokenizer"}'},
  {name: 'bert accents kept', base: 'wordpiece', a: wpAdded, n: bert({strip_accents: false}), p: '{"type":"BertPreTokenizer"}'},
  {name: 'bert no clean, no chinese', base: 'wordpiece', a: wpAdded, n: bert({clean_text: false, handle_chinese_chars: false}), p: '{"type":"BertPreTokenizer"}'},
  {name: 'sequence nfd/strip accents/whitespace', base: 'wordpiece', a: wpAdded,
   n: '{"type":"Sequence","normalizers":[{"type":"NFD"},{"type":"StripAccents"},{"type":"Lowercase"},{"type":"Strip","strip_left":true,"strip_right":true},{"type":"Replace","pattern":{"String":"-"},"content":" "}]}',
   p: '{"type":"Whitespace"}'},
  {name: 'nfkc lowercase whitespace-split', base: 'wordpiece', a: wpAdded,
   n: '{"type":"Sequence","normalizers":[{"type":"NFKC"},{"type":"Lowercase"}]}', p: '{"type":"WhitespaceSplit"}'},
  {name: 'nmt nfkd', base: 'wordpiece', a: wpAdded,
   n: '{"type":"Sequence","normalizers":[{"type":"Nmt"},{"type":"NFKD"},{"type":"Lowercase"}]}', p: '{"type":"BertPreTokenizer"}'},
  {name: 'nfc strip-right prepend', base: 'wordpiece', a: wpAdded,
   n: '{"type":"Sequence","normalizers":[{"type":"NFC"},{"type":"Lowercase"},{"type":"Strip","strip_left":false,"strip_right":true},{"type":"Replace","pattern":{"Regex":"\\\\s+"},"content":" "},{"type":"Prepend","prepend":"the "}]}',
   p: '{"type":"BertPreTokenizer"}'},
  ...behaviours.map((b) => ({name: 'punctuation ' + b, base: 'wordpiece', a: wpAdded, n: wpNorm,
                              p: '{"type":"Sequence","pretokenizers":[{"type":"WhitespaceSplit"},{"type":"Punctuation","behavior":"' + b + '"}]}'})),
  {name: 'digits individual', base: 'wordpiece', a: wpAdded, n: wpNorm,
   p: '{"type":"Sequence","pretokenizers":[{"type":"BertPreTokenizer"},{"type":"Digits","individual_digits":true}]}'},
  {name: 'digits contiguous', base: 'wordpiece', a: wpAdded, n: wpNorm,
   p: '{"type":"Sequence","pretokenizers":[{"type":"WhitespaceSplit"},{"type":"Digits","individual_digits":false}]}'},
  {name: 'added token flags', base: 'wordpiece', n: wpNorm, p: '{"type":"BertPreTokenizer"}',
   a: '[{"id":1,"content":"[UNK]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},' +
      '{"id":2,"content":"[CLS]","single_word":false,"lstrip":true,"rstrip":true,"normalized":false,"special":true},' +
      '{"id":3,"content":"[SEP]","single_word":true,"lstrip":false,"rstrip":false,"normalized":false,"special":true},' +
      '{"id":6598,"content":"Hello","single_word":true,"lstrip":false,"rstrip":false,"normalized":true,"special":false},' +
      '{"id":1094,"content":"WORLD","single_word":false,"lstrip":false,"rstrip":false,"normalized":true,"special":false},' +
      '{"id":29527,"content":"hello w","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":false}]'},
  {name: 'metaspace split first', base: 'unigram', a: ugAdded,
   n: '{"type":"Sequence","normalizers":[{"type":"NFKC"},{"type":"Lowercase"}]}',
   p: '{"type":"Metaspace","replacement":"\u2581","prepend_scheme":"first","split":true}'},
  {name: 'metaspace never', base: 'unigram', a: ugAdded, n: '{"type":"Lowercase"}',
   p: '{"type":"Metaspace","replacement":"\u2581","prepend_scheme":"never","split":true}'},
  {name: 'metaspace legacy add_prefix_space', base: 'unigram', a: ugAdded, n: 'null',
   p: '{"type":"Metaspace","replacement":"\u2581","add_prefix_space":true}'},
  {name: 'unigram bert pre-tokenizer', base: 'unigram', a: ugAdded, n: wpNorm,
   p: '{"type":"Sequence","pretokenizers":[{"type":"BertPreTokenizer"},{"type":"Metaspace","replacement":"\u2581","prepend_scheme":"always","split":false}]}'},
];

const out = texts.map((t) => 'T ' + Buffer.from(t, 'utf8').toString('hex'));
(async () => {
  for (const c of configs) {
    const spliced = c.a !== undefined;
    const json = spliced ? splice(c.base, c.a, c.n, c.p) : readBase(c.base);
    const tok = Tokenizer.fromString(json);
    out.push('C ' + [c.name, c.base, spliced ? c.a : '-', spliced ? c.n : '-', spliced ? c.p : '-'].join('\t'));
    for (const t of texts) {
      const e = await tok.encode(t, null, {addSpecialTokens: false});
      out.push(('I ' + e.getIds().join(' ')).trimEnd());
    }
  }
  fs.writeFileSync(path.join(outDir, 'tokenizer_oracle.txt'), out.join('\n') + '\n');
  console.log(`${configs.length} configurations x ${texts.length} texts`);
})();
