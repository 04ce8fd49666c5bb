import { jest } from '@jest/globals';
import { pino } from 'pino';
import { chunkText } from 'src/modules/embeddings/chunking/chunker.js';
import type { EmbeddingService } from 'src/modules/embeddings/embedding.service.js';
import type { ExtractionService } from 'src/modules/ingestion/extraction/extraction.service.js';
import { IngestionErrors } from 'src/modules/ingestion/ingestion.errors.js';
import type { ChunkVectorsRepository } from 'src/modules/chunk-index/chunk-vectors.repository.js';
import type { DocumentsRepository } from 'src/modules/documents/documents.repository.js';
import type { IngestionRepository } from 'src/modules/ingestion/ingestion.repository.js';
import { IngestionService } from 'src/modules/ingestion/ingestion.service.js';
import type { DatasetIndexService } from 'src/modules/ingestion/dataset-index.service.js';
import type { VectorCatchUpService } from 'src/modules/ingestion/vector-catch-up.service.js';
import type { EmbeddingProvider } from 'src/modules/embeddings/embedding-provider.js';
import { strictMock } from '../../../test/utils/strict-mock.js';

const run = { documentId: 'doc_1', datasetSeq: '1', generation: 2 };
const loaded = {
  document: {
    id: 'doc_1',
    datasetId: 'ds_1',
    kind: 'text',
    filename: null,
    metadata: { title: 'Greetings' },
  },
  content: Buffer.from('text'),
};

const provider: EmbeddingProvider = {
  name: 'openai',
  model: 'm',
  dimensions: 2,
  maxTokens: 100,
  chunk: () => Promise.reject(new Error('chunked by the service')),
  embedPassages: (texts: string[]) => Promise.resolve(texts.map(() => [1, 0])),
  embedQuery: () => Promise.resolve([1, 0]),
};

function setUp(options: {
  extract: ExtractionService['extract'];
  indexed?: boolean;
  loaded?: unknown;
  /** What `current()` gives, call after call (the last one from then on); a provider by default. */
  providers?: (EmbeddingProvider | null)[];
}) {
  const stages: string[] = [];
  const providers = [...(options.providers ?? [provider])];
  // The run's processing time, from the database's clock; null when the run was no longer current.
  const index = jest.fn<IngestionRepository['index']>((_datasetId, runs) =>
    Promise.resolve(runs.map(() => (options.indexed === false ? null : 1_234))),
  );
  const fail = jest.fn<IngestionRepository['fail']>(() => Promise.resolve('ds_1'));
  const request = jest.fn<VectorCatchUpService['request']>(() => Promise.resolve());
  const indexRequest = jest.fn<DatasetIndexService['request']>(() => Promise.resolve());
  const documents = strictMock<DocumentsRepository>({
    loadRun: () => Promise.resolve((options.loaded === undefined ? loaded : options.loaded) as never),
    setProgress: (updates) => {
      stages.push(...updates.map((update) => update.stage));
      return Promise.resolve();
    },
  });
  // Indexing and failing write the document's event in their own transaction (IngestionRepository).
  const repository = strictMock<IngestionRepository>({ index, fail });
  const embedding = strictMock<EmbeddingService>({
    current: () => (providers.length > 1 ? providers.shift()! : providers[0]),
    chunk: (text) =>
      Promise.resolve(
        chunkText(text, { count: (t) => t.split(' ').length }, { maxTokens: 50, overlapTokens: 0 }),
      ),
  });
  const service = new IngestionService(
    documents,
    repository,
    strictMock<ExtractionService>({ extract: options.extract }),
    embedding,
    strictMock<ChunkVectorsRepository>({}),
    strictMock<VectorCatchUpService>({ request }),
    strictMock<DatasetIndexService>({ request: indexRequest }),
    pino({ level: 'silent' }),
  );
  return { service, stages, index, fail, request, indexRequest };
}

describe('IngestionService.process', () => {
  it('runs extract → chunk → embed → index', async () => {
    const { service, stages, index } = setUp({
      extract: () => Promise.resolve({ format: 'prose', sections: [{ text: 'Hello world.', page: 1 }] }),
    });
    await service.process(run);
    // The stages before indexing came within the run's first second: not written (ProgressReporter).
    expect(stages).toEqual(['indexing']);
    expect(index).toHaveBeenCalledWith('ds_1', [
      {
        run,
        chunks: [
          expect.objectContaining({ content: 'Hello world.', page: 1, context: 'Greetings\nGreetings' }),
        ],
        embeddings: { name: 'm', dimensions: 2, vectors: [[1, 0]], embedded: 1, reused: 0 },
      },
    ]);
  });

  it("asks for the dataset's own vector index to be looked at once the run is indexed", async () => {
    const extract = () => Promise.resolve({ format: 'prose' as const, sections: [{ text: 'Hello world.' }] });
    const indexed = setUp({ extract });
    await indexed.service.process(run);
    expect(indexed.indexRequest).toHaveBeenCalledWith('1'); // the dataset's seq, which routes on Citus

    // A run that was no longer current wrote nothing: no dataset grew.
    const stale = setUp({ extract, indexed: false });
    await stale.service.process(run);
    expect(stale.indexRequest).not.toHaveBeenCalled();
  });

  it('asks for a catch-up when it indexed keyword-only and the model arrived meanwhile', async () => {
    const extract = () => Promise.resolve({ format: 'prose' as const, sections: [{ text: 'Hello world.' }] });
    const late = setUp({ extract, providers: [null, provider] });
    await late.service.process(run);
    expect(late.stages).toEqual(['indexing']);
    expect(late.index).toHaveBeenCalledWith('ds_1', [{ run, chunks: expect.any(Array), embeddings: null }]);
    expect(late.request).toHaveBeenCalledTimes(1);

    // Keyword-only with no model to come, or embedded: nothing to catch up.
    for (const providers of [[null], [provider]]) {
      const other = setUp({ extract, providers });
      await other.service.process(run);
      expect(other.request).not.toHaveBeenCalled();
    }
  });

  it('fails the document with the code of a permanent error, without retrying', async () => {
    const { service, fail, index } = setUp({
      extract: () => Promise.reject(IngestionErrors.encryptedPdf()),
    });
    await expect(service.process(run)).resolves.toBeUndefined();
    expect(index).not.toHaveBeenCalled();
    expect(fail).toHaveBeenCalledWith(run, expect.objectContaining({ code: 'invalid_pdf' }));
  });

  it('fails a document without text with no_text_extracted', async () => {
    const { service, fail } = setUp({
      extract: () => Promise.resolve({ format: 'prose', sections: [{ text: '  \n ' }] }),
    });
    await service.process(run);
    expect(fail).toHaveBeenCalledWith(run, expect.objectContaining({ code: 'no_text_extracted' }));
  });

  it('rethrows a transient error for the queue to retry', async () => {
    const { service, fail } = setUp({ extract: () => Promise.reject(new Error('connection reset')) });
    await expect(service.process(run)).rejects.toThrow('connection reset');
    expect(fail).not.toHaveBeenCalled();
  });

  it('indexes the runs of a dataset that wait for one another together, and each alone when that fails', async () => {
    const extract = () => Promise.resolve({ format: 'prose' as const, sections: [{ text: 'Hello world.' }] });
    const { service, index } = setUp({ extract });
    const runs = [1, 2, 3, 4, 5].map((generation) => ({
      documentId: `doc_${generation}`,
      datasetSeq: '1',
      generation,
    }));
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    index.mockImplementation(async (_datasetId, group) => {
      if (group.length === 1 && ['doc_1', 'doc_2'].includes(group[0].run.documentId)) await held;
      if (group.length > 1) throw new Error('one of them is bad');
      if (group[0].run.documentId === 'doc_3') throw new Error('doc_3 is bad');
      return [1];
    });
    const processed = Promise.allSettled(runs.map((r) => service.process(r)));
    // The first run's transaction is under way, and the second's beside it (two a dataset at once); the
    // next three arrive meanwhile.
    await new Promise((resolve) => setTimeout(resolve, 20));
    release();
    const outcomes = await processed;
    expect(outcomes.map((outcome) => outcome.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
    ]);
    expect(index.mock.calls.map(([, group]) => group.map((r) => r.run.documentId))).toEqual([
      ['doc_1'],
      ['doc_2'],
      ['doc_3', 'doc_4', 'doc_5'],
      ['doc_3'],
      ['doc_4'],
      ['doc_5'],
    ]);
  });

  it('does nothing for a run that is no longer current', async () => {
    const gone = setUp({ extract: () => Promise.reject(new Error('must not be called')), loaded: null });
    await gone.service.process(run);
    expect(gone.stages).toEqual([]);
  });
});
