// npm run bench:ocr — what the service's OCR settings cost and what they read, against tesseract.js's
// defaults (page segmentation PSM 6, one uniform block; the image as given) and against PSM 3 alone
// (Tesseract's automatic layout analysis, as its command line runs). The service (dist/, one worker)
// adds a layout pass and reads images whose text lines are under 20 px from a copy enlarged 1.5 times.
// Images: ../shared/fixtures/img (phototest at 200 dpi, DA-1p and layout-parser-paper-fast rendered at
// 72 dpi) and test/fixtures/merged-table.png. Each repetition runs every setting on an image, in an
// order that rotates, so that a slow phase of a shared machine falls on all of them; figures are
// medians over the repetitions (BENCH_OCR_REPS, 7), after one unmeasured warm-up. Words recovered: the
// reference's words found in the output (as a multiset, case-insensitive, letters and digits): the
// known text of phototest, the text layer of layout-parser-paper-fast.pdf's first page, the table's
// cells; DA-1p has no reference, its output's word count is given.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { PDFParse } from 'pdf-parse';
import { createWorker, OEM, PSM } from 'tesseract.js';
import { OcrService } from '../dist/modules/ingestion/extraction/ocr.service.js';
import { percentile, writeResult } from './lib.mjs';

const REPS = Number(process.env.BENCH_OCR_REPS ?? 7);
const FIXTURES = process.env.BENCH_FIXTURES ?? '../shared/fixtures';
const ENGLISH = createRequire(import.meta.url)('@tesseract.js-data/eng');

const words = (text) =>
  text
    .toLowerCase()
    .normalize('NFKC')
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);

async function pdfPageText(path, page) {
  const parser = new PDFParse({ data: new Uint8Array(readFileSync(path)) });
  try {
    return (await parser.getText({ partial: [page] })).text;
  } finally {
    await parser.destroy();
  }
}

const PHOTOTEST =
  'This is a lot of 12 point text to test the ocr code and see if it works on all types of file format. ' +
  'The quick brown dog jumped over the lazy fox. '.repeat(4);
/** The cells of test/fixtures/render-table.mjs's table, row by row. */
const TABLE =
  'Region Product Units sold Notes Q1 Q2 Q3 Q4 Northern Widgets 120 135 150 170 Steady growth ' +
  'Gadgets 80 95 Discontinued Stock cleared Sprockets 45 50 48 52 Supplier changed ' +
  'Southern Widgets 210 190 205 230 Gizmos Launched in autumn Pilot market ' +
  'Eastern Gadgets 64 71 77 83 New depot Total 519 541 480 535';

const IMAGES = [
  { name: 'phototest.png', path: `${FIXTURES}/img/phototest.png`, reference: PHOTOTEST },
  { name: 'DA-1p.png', path: `${FIXTURES}/img/DA-1p.png`, reference: null },
  {
    name: 'layout-parser-paper-fast.jpg',
    path: `${FIXTURES}/img/layout-parser-paper-fast.jpg`,
    reference: await pdfPageText(`${FIXTURES}/pdf/layout-parser-paper-fast.pdf`, 1),
  },
  { name: 'merged-table.png', path: 'test/fixtures/merged-table.png', reference: TABLE, ordinary: false },
];

/** The reference's words found in `text`, each as often as the reference has it. */
function recovered(text, reference) {
  const found = new Map();
  for (const word of words(text)) found.set(word, (found.get(word) ?? 0) + 1);
  let count = 0;
  for (const word of words(reference)) {
    if ((found.get(word) ?? 0) > 0) {
      count++;
      found.set(word, found.get(word) - 1);
    }
  }
  return count;
}

async function tesseractWorker(params) {
  const worker = await createWorker('eng', OEM.LSTM_ONLY, {
    langPath: ENGLISH.langPath,
    gzip: ENGLISH.gzip,
    cacheMethod: 'none',
  });
  if (params) await worker.setParameters(params);
  return worker;
}

const defaults = await tesseractWorker();
const auto = await tesseractWorker({ tessedit_pageseg_mode: PSM.AUTO });
const service = new OcrService({ workers: 1, maxPixels: 40_000_000 });
const SETTINGS = {
  defaults: async (bytes) => (await defaults.recognize(bytes)).data.text,
  psm_auto: async (bytes) => (await auto.recognize(bytes)).data.text,
  service: async (bytes) => (await service.extract(bytes)).sections[0].text,
};
const names = Object.keys(SETTINGS);

const result = { repetitions: REPS, settings: names, images: [] };
try {
  for (const image of IMAGES) {
    const bytes = readFileSync(image.path);
    const times = Object.fromEntries(names.map((name) => [name, []]));
    const texts = {};
    for (const name of names) texts[name] = await SETTINGS[name](bytes); // warm-up, and the text
    for (let rep = 0; rep < REPS; rep++) {
      for (let i = 0; i < names.length; i++) {
        const name = names[(rep + i) % names.length];
        const start = performance.now();
        await SETTINGS[name](bytes);
        times[name].push(performance.now() - start);
      }
    }
    const row = { image: image.name, ordinary: image.ordinary ?? true, reference_words: null, settings: {} };
    if (image.reference) row.reference_words = words(image.reference).length;
    for (const name of names) {
      row.settings[name] = {
        median_ms: Math.round(percentile(times[name], 50)),
        ms: times[name].map(Math.round),
        words: words(texts[name]).length,
        words_recovered: image.reference ? recovered(texts[name], image.reference) : null,
      };
    }
    const ratio = (name) => +(row.settings[name].median_ms / row.settings.defaults.median_ms).toFixed(2);
    row.psm_auto_vs_defaults = ratio('psm_auto');
    row.service_vs_defaults = ratio('service');
    result.images.push(row);
    const cell = (name) => {
      const s = row.settings[name];
      const read =
        s.words_recovered === null ? `${s.words} words` : `${s.words_recovered}/${row.reference_words}`;
      return `${name} ${s.median_ms} ms ${read}`;
    };
    console.log(
      `${image.name.padEnd(30)} ${names.map(cell).join(' | ')} | service/defaults ${row.service_vs_defaults}`,
    );
  }
} finally {
  await Promise.all([defaults.terminate(), auto.terminate(), service.onApplicationShutdown()]);
}
result.measured_at = new Date().toISOString();
console.log(`written to ${writeResult('ocr', result)}`);
