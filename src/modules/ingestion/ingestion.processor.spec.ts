import { EventEmitter } from 'node:events';
import { jest } from '@jest/globals';
import type { Queue } from 'bull';
import { pino } from 'pino';
import { readSection } from 'src/config/define.js';
import { ingestionSection } from 'src/modules/ingestion/ingestion.config.js';
import { IngestionProcessor } from 'src/modules/ingestion/ingestion.processor.js';
import type { ProcessDocumentJob } from 'src/modules/ingestion-queue/ingestion.queue.js';
import type { IngestionService } from 'src/modules/ingestion/ingestion.service.js';
import type { DocumentsRepository } from 'src/modules/documents/documents.repository.js';
import { strictMock } from '../../../test/utils/strict-mock.js';

function setUp() {
  const queue = Object.assign(new EventEmitter(), {
    process: () => new Promise<void>(() => undefined),
  });
  const logged: { level: number; msg: string; err?: { message: string } }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
  const fail = jest.fn<IngestionService['fail']>(() => Promise.resolve());
  const processor = new IngestionProcessor(
    queue as unknown as Queue<ProcessDocumentJob>,
    strictMock<IngestionService>({ fail }),
    strictMock<DocumentsRepository>({ datasetSeqOf: () => Promise.resolve('7') }),
    readSection(ingestionSection),
    logger,
  );
  processor.onApplicationBootstrap();
  return { queue, logged, fail };
}

describe('IngestionProcessor, on a failed job', () => {
  it('takes a job Bull had already removed (stalled too often) without rejecting, leaving its document to the sweep', async () => {
    const { queue, logged, fail } = setUp();
    // Jest fails the test on the rejection, should the listener reject.
    queue.emit('failed', null, new Error('job stalled more than allowable limit'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(fail).not.toHaveBeenCalled();
    expect(logged).toContainEqual(
      expect.objectContaining({
        level: 40,
        msg: 'a removed job failed; the recovery sweep settles its document',
        err: expect.objectContaining({ message: 'job stalled more than allowable limit' }),
      }),
    );
  });

  it('fails the run of a job queued without its dataset’s seq, looked up from the document', async () => {
    const { queue, fail } = setUp();
    const job = { data: { documentId: 'doc_old', generation: 3 }, attemptsMade: 5, opts: { attempts: 5 } };
    queue.emit('failed', job, new Error('database busy'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(fail).toHaveBeenCalledWith(
      { documentId: 'doc_old', datasetSeq: '7', generation: 3 },
      expect.objectContaining({ code: 'processing_error' }),
    );
  });
});
