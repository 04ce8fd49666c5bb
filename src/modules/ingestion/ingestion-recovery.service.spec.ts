import { jest } from '@jest/globals';
import { pino } from 'pino';
import { readSection } from 'src/config/define.js';
import { ingestionSection } from 'src/modules/ingestion/ingestion.config.js';
import { IngestionRecoveryService } from 'src/modules/ingestion/ingestion-recovery.service.js';
import type { IngestionQueue } from 'src/modules/ingestion-queue/ingestion.queue.js';
import type { DocumentsRepository, StaleRun } from 'src/modules/documents/documents.repository.js';
import type { IngestionService } from 'src/modules/ingestion/ingestion.service.js';
import { strictMock } from '../../../test/utils/strict-mock.js';

describe('IngestionRecoveryService.sweep', () => {
  it('goes on to the next stalled document when one cannot be recovered', async () => {
    const stale: StaleRun[] = [
      { id: 'doc_stuck', datasetId: 'ds_1', datasetSeq: '1', generation: 1, recoveries: 0 },
      { id: 'doc_next', datasetId: 'ds_1', datasetSeq: '1', generation: 1, recoveries: 0 },
    ];
    const enqueue = jest.fn<IngestionQueue['enqueue']>(() => Promise.resolve(true));
    const logged: { msg: string; document_id?: string }[] = [];
    const service = new IngestionRecoveryService(
      strictMock<DocumentsRepository>({
        staleRuns: () => Promise.resolve(stale),
        recordRecovery: (run) =>
          run.documentId === 'doc_stuck'
            ? Promise.reject(new Error('integer out of range'))
            : Promise.resolve(true),
      }),
      strictMock<IngestionQueue>({ hasLiveJob: () => Promise.resolve(false), enqueue }),
      strictMock<IngestionService>({}),
      readSection(ingestionSection),
      pino({ level: 'warn' }, { write: (line: string) => void logged.push(JSON.parse(line)) }),
    );
    await service.sweep();
    expect(enqueue).toHaveBeenCalledWith({ id: 'doc_next', datasetSeq: '1', generation: 1, recoveries: 1 });
    expect(logged).toContainEqual(
      expect.objectContaining({ msg: 'could not recover a stalled document', document_id: 'doc_stuck' }),
    );
  });
});
