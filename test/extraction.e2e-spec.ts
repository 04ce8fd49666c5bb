import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Logger } from 'pino';
import type * as Extraction from 'src/modules/ingestion/extraction/extraction.service.js';
import type * as Ocr from 'src/modules/ingestion/extraction/ocr.service.js';
import { longestStall } from './utils/responsiveness.js';

/** The built service: its threads run the compiled worker script, which the TypeScript source is not. */
const { ExtractionService } = (await import(
  `${process.cwd()}/dist/modules/ingestion/extraction/extraction.service.js`
)) as typeof Extraction;
const { OcrService } = (await import(
  `${process.cwd()}/dist/modules/ingestion/extraction/ocr.service.js`
)) as typeof Ocr;

const FIXTURES = '../shared/fixtures';
const execFileAsync = promisify(execFile);

/** A YAML list of `items` records, 59 bytes each: 200,000 (11.8 MB) take about a second to read. */
function yamlList(items: number): Buffer {
  const lines: string[] = [];
  for (let i = 0; i < items; i++) lines.push(`- id: ${i}\n  text: Words about item ${i}\n  tags: [a, b]`);
  return Buffer.from(lines.join('\n'));
}

const OCR = { workers: 1, maxPixels: 40_000_000 };

function service(limits: { timeoutSeconds?: number; memoryMiB?: number; concurrency?: number } = {}) {
  const config = {
    concurrency: limits.concurrency ?? 2,
    staleAfterSeconds: 120,
    maxRecoveries: 3,
    extractionTimeoutSeconds: limits.timeoutSeconds ?? 120,
    extractionMemoryMiB: limits.memoryMiB ?? 2048,
  };
  const warnings: string[] = [];
  const logger = { warn: (_: unknown, message: string) => warnings.push(message) } as unknown as Logger;
  return { extraction: new ExtractionService(new OcrService(OCR), config, logger), warnings };
}

const SMALL_JSON = Buffer.from(JSON.stringify({ title: 'After the limit', tags: ['still read'] }));

describe('ExtractionService', () => {
  it('parses files in a thread: the event loop goes on while a large YAML file is read', async () => {
    const { extraction } = service();
    try {
      const { result, stallMs, elapsedMs } = await longestStall(() =>
        extraction.extract('yaml', yamlList(200_000)),
      );
      expect(result.sections[0].text).toContain('[199999].text: Words about item 199999');
      // Parsed on the main thread, the whole parse would be one stall.
      expect(elapsedMs).toBeGreaterThan(400);
      expect(stallMs).toBeLessThan(elapsedMs / 4);
    } finally {
      await extraction.onApplicationShutdown();
    }
  }, 60_000);

  it('fails a file past the time limit with extraction_limit_exceeded, and reads the next', async () => {
    // A quarter of a second (the setting takes whole seconds): a fifth of what the file takes here.
    const { extraction } = service({ timeoutSeconds: 0.25, concurrency: 1 });
    try {
      const file = yamlList(200_000);
      const started = performance.now();
      await expect(extraction.extract('yaml', file)).rejects.toMatchObject({
        name: 'PermanentProcessingError',
        code: 'extraction_limit_exceeded',
        message: 'Reading the yaml file took more than 0.25 seconds',
        details: { kind: 'yaml', limit: 'time', timeout_seconds: 0.25 },
      });
      expect(performance.now() - started).toBeLessThan(1_000); // stopped, not read to its end
      const next = await extraction.extract('json', SMALL_JSON);
      expect(next.sections[0].text).toBe('title: After the limit\ntags[0]: still read');
    } finally {
      await extraction.onApplicationShutdown();
    }
  }, 60_000);

  it('fails a file past the memory limit with extraction_limit_exceeded, and reads the next', async () => {
    const { extraction, warnings } = service({ memoryMiB: 64, concurrency: 1 });
    try {
      await expect(extraction.extract('yaml', yamlList(100_000))).rejects.toMatchObject({
        code: 'extraction_limit_exceeded',
        details: { kind: 'yaml', limit: 'memory', memory_mb: 64 },
      });
      expect(warnings).toEqual(['an extraction thread ended']);
      const next = await extraction.extract('json', SMALL_JSON);
      expect(next.sections[0].text).toContain('still read');
    } finally {
      await extraction.onApplicationShutdown();
    }
  }, 60_000);

  it('brings a file’s own failure across the thread with its code and details', async () => {
    const { extraction } = service();
    try {
      await expect(
        extraction.extract('pdf', readFileSync(`${FIXTURES}/pdf/encrypted-password.pdf`)),
      ).rejects.toMatchObject({
        name: 'PermanentProcessingError',
        code: 'invalid_pdf',
        details: { reason: 'encrypted' },
      });
    } finally {
      await extraction.onApplicationShutdown();
    }
  });

  it('fails a truncated JPEG as invalid_document: its header reads, its picture does not', async () => {
    const ocr = new OcrService(OCR);
    try {
      const truncated = readFileSync(`${FIXTURES}/img/phototest.jpg`).subarray(0, 30_000);
      await expect(ocr.extract(truncated)).rejects.toMatchObject({
        code: 'invalid_document',
        details: { kind: 'image' },
      });
    } finally {
      await ocr.onApplicationShutdown();
    }
  });

  it('reads every row label and cell of a bordered table with merged cells, in a screenshot’s 13 px text', async () => {
    // test/fixtures/render-table.mjs makes the image: labels spanning rows, cells spanning columns.
    const ocr = new OcrService(OCR);
    try {
      const { sections } = await ocr.extract(readFileSync('test/fixtures/merged-table.png'));
      const words = sections[0].text.split(/[^A-Za-z0-9]+/).filter(Boolean);
      const cells = [
        ['Region', 'Product', 'Units', 'sold', 'Notes', 'Q2', 'Q3', 'Q4'],
        ['Northern', 'Widgets', '120', '135', '150', '170', 'Steady', 'growth'],
        ['Gadgets', '80', '95', 'Discontinued', 'Stock', 'cleared'],
        ['Sprockets', '45', '50', '48', '52', 'Supplier', 'changed'],
        ['Southern', 'Widgets', '210', '190', '205', '230'],
        ['Gizmos', 'Launched', 'in', 'autumn', 'Pilot', 'market'],
        ['Eastern', 'Gadgets', '64', '71', '77', '83', 'New', 'depot'],
        ['Total', '519', '541', '480', '535'],
      ].flat();
      const missing = cells.filter((word) => {
        const at = words.indexOf(word);
        if (at >= 0) words.splice(at, 1);
        return at < 0;
      });
      expect(missing).toEqual([]);
      // The heading Q1 may come out as "Ql": the LSTM reads the bold 1 of DejaVu Sans as an l at most
      // scales, on Tesseract's command line too (docs/ingestion.md, OCR settings).
      expect(words.filter((word) => word === 'Q1' || word === 'Ql')).toHaveLength(1);
    } finally {
      await ocr.onApplicationShutdown();
    }
  }, 60_000);

  it('keeps pdf.js’s polyfills of the builtins out of the main thread', async () => {
    // In a process of its own: jest's module sandbox would hide the polyfills from this test.
    const probe = async (how: 'service' | 'main-thread') => {
      const { stdout } = await execFileAsync(process.execPath, [
        fileURLToPath(new URL('./utils/builtins.probe.mjs', import.meta.url)),
        how,
        `${FIXTURES}/pdf/fake-memo.pdf`,
      ]);
      return JSON.parse(stdout) as { text: string; unchanged: Record<string, boolean> };
    };
    const [threaded, onMainThread] = await Promise.all([probe('service'), probe('main-thread')]);
    expect(threaded.text).toContain('20,000 bottles of water');
    expect(threaded.unchanged).toEqual({ 'JSON.parse': true, 'Array.prototype.push': true });
    // What the probe sees when pdf.js runs on the thread it checks.
    expect(onMainThread.text).toBe(threaded.text);
    expect(onMainThread.unchanged).toEqual({ 'JSON.parse': false, 'Array.prototype.push': false });
  }, 60_000);
});
