import { pino } from 'pino';
import { type ProgressUpdate, ProgressReporter } from 'src/modules/ingestion/progress-reporter.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const run = { documentId: 'doc_1', datasetSeq: '1', generation: 1 };
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
  it('writes the latest stage of each interval, the first an interval after the run starts', async () => {
    const { reporter, written } = setUp(60);
    await reporter.report(at('extraction'));
    await reporter.report(at('chunking'));
    expect(written).toEqual([]);
    await sleep(100);
    // Only the latest stage of the interval.
    expect(written).toEqual([['doc_1:chunking']]);
    // An interval after the last write, a report is written at once.
    await sleep(70);
    await reporter.report(at('embedding'));
    expect(written.at(-1)).toEqual(['doc_1:embedding']);
    // Within the interval, only a report made `now`.
    await reporter.report(at('indexing'), { now: true });
    expect(written.at(-1)).toEqual(['doc_1:indexing']);
    reporter.end(run);
  });

  it('writes nothing for a run that ends within the interval', async () => {
    const { reporter, written } = setUp(40);
    await reporter.report(at('extraction'));
    await reporter.report(at('indexing'));
    reporter.end(run);
    await sleep(80);
    expect(written).toEqual([]);
  });

  it('writes the reports of concurrent runs together', async () => {
    const { reporter, written } = setUp(30);
    const runs = [1, 2, 3].map((n) => ({ documentId: `doc_${n}`, datasetSeq: '1', generation: 1 }));
    await Promise.all(runs.map((r) => reporter.report({ ...r, stage: 'extraction', percent: 5 })));
    // Written after 30 ms; 30 ms later, a report is written at once.
    await sleep(100);
    await Promise.all(runs.map((r) => reporter.report({ ...r, stage: 'embedding', percent: 50 })));
    // The first write goes alone; the two that arrive while it runs go in one statement.
    expect(written.slice(-2)).toEqual([['doc_1:embedding'], ['doc_2:embedding', 'doc_3:embedding']]);
    for (const r of runs) reporter.end(r);
  });
});
