// Reads a PDF fixture in a process of its own, then says which of JavaScript's builtins are still
// its own: jest's module sandbox hides what pdf.js's polyfills do to the process. For
// test/extraction.e2e-spec.ts. `node builtins.probe.mjs service|main-thread <pdf>`: through the built
// ExtractionService, or with the built extractor called on this thread.
import { readFileSync } from 'node:fs';

const [how, file] = process.argv.slice(2);
// Node 24 has every feature these two polyfills add, so pdf.js's core-js would leave them alone: stand
// in first for a runtime without them, a JSON.parse whose reviver sees no source text and a push that
// miscounts past 2^32 - 1 (what core-js tests for), so that a polyfill run on this thread shows.
const nativeParse = JSON.parse;
JSON.parse = function parse(text, reviver) {
  return typeof reviver === 'function'
    ? nativeParse(text, (key, value) => reviver(key, value))
    : nativeParse(text);
};
const nativePush = Array.prototype.push;
Array.prototype.push = function push(...items) {
  const length = nativePush.apply(this, items);
  return length > 0xffffffff ? 0 : length;
};
// core-js's replacements pass for native code in their source text: they are told apart by identity.
const builtins = () => ({ 'JSON.parse': JSON.parse, 'Array.prototype.push': Array.prototype.push });
const before = builtins();
const dist = new URL('../../dist/modules/ingestion/extraction/', import.meta.url);
const bytes = readFileSync(file);
let text;
if (how === 'service') {
  const { ExtractionService } = await import(new URL('extraction.service.js', dist).href);
  const config = { concurrency: 1, extractionTimeoutSeconds: 60, extractionMemoryMiB: 512 };
  const extraction = new ExtractionService(null, config, { warn: () => undefined });
  text = (await extraction.extract('pdf', bytes)).sections.map((section) => section.text).join('\n');
  await extraction.onApplicationShutdown();
} else {
  const { extractPdf } = await import(new URL('office.extractor.js', dist).href);
  text = (await extractPdf(bytes)).sections.map((section) => section.text).join('\n');
}
const after = builtins();
const unchanged = Object.fromEntries(Object.keys(before).map((name) => [name, before[name] === after[name]]));
process.stdout.write(JSON.stringify({ text, unchanged }));
