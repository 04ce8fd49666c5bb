import { pino } from 'pino';
import { type ProgressUpdate, ProgressReporter } from 'src/modules/ingestion/progress-reporter.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const run = { documentId: 'doc_1', generation: 1 };
const at = (stage: ProgressUpdate['stage']): ProgressUpdate => ({ ...run, stage, percent: 0 });

function setUp(intervalMs: number) {
  const written: string[][] = [];
  const reporter = new ProgressReporter(
    (updates) => {
      written.push(updates.map((update) => `${update.documentId}:${update.stage}`));
      return Promise.resolve();
    },
    intervalMs,
    pino({ level: 'silent' }),
  );
  return { reporter, written };
}

describe('ProgressReporter', () => {
  it("writes a run's first report at once, and a later stage at the end of the interval", async () => {
    const { reporter, written } = setUp(60);
    await reporter.report(at('extraction'));
    expect(written).toEqual([['doc_1:extraction']]);
    await reporter.report(at('chunking'));
    await reporter.report(at('embedding'));
    expect(written).toHaveLength(1);
    await sleep(100);
    // Only the latest stage of the interval.
    expect(written).toEqual([['doc_1:extraction'], ['doc_1:embedding']]);
    // An interval after the last write, a report is written at once again.
    await sleep(70);
    await reporter.report(at('indexing'));
    expect(written.at(-1)).toEqual(['doc_1:indexing']);
    reporter.end(run);
  });

  it('drops what a run had not written when it ends', async () => {
    const { reporter, written } = setUp(40);
    await reporter.report(at('extraction'));
    await reporter.report(at('indexing'));
    reporter.end(run);
    await sleep(80);
    expect(written).toEqual([['doc_1:extraction']]);
  });

  it('writes the first reports of concurrent runs together', async () => {
    const { reporter, written } = setUp(1_000);
    await Promise.all(
      [1, 2, 3].map((n) =>
        reporter.report({ documentId: `doc_${n}`, generation: 1, stage: 'extraction', percent: 5 }),
      ),
    );
    // The first write goes alone; the two that arrive while it runs go in one statement.
    expect(written).toEqual([['doc_1:extraction'], ['doc_2:extraction', 'doc_3:extraction']]);
    for (const n of [1, 2, 3]) reporter.end({ documentId: `doc_${n}`, generation: 1 });
  });
});
