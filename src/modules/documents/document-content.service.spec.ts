import { AppError } from 'src/common/errors/app-error.js';
import { ANONYMOUS } from 'src/modules/auth/auth.types.js';
import type { ListedChunk, PassagesRepository } from 'src/modules/chunk-index/passages.repository.js';
import { DocumentContentService } from 'src/modules/documents/document-content.service.js';
import type { DocumentEntity, DocumentStatus } from 'src/modules/documents/document.entity.js';
import type { DocumentsRepository } from 'src/modules/documents/documents.repository.js';
import type { DocumentsService } from 'src/modules/documents/documents.service.js';
import { strictMock } from '../../../test/utils/strict-mock.js';

const DATASET_ID = 'ds_AbCdEfGhIjKlMnOpQrStUv';
const DOCUMENT_ID = 'doc_AbCdEfGhIjKlMnOpQrStUv';
const TEXT = 'ab😀cdefgh';

/** A document in `status`, with chunks in the index when `indexed` (ready, or a version replacing them). */
function documentIn(status: DocumentStatus, indexed = status === 'ready'): DocumentEntity {
  return {
    id: DOCUMENT_ID,
    datasetId: DATASET_ID,
    status,
    chunksCreated: indexed ? 3 : null,
    error: status === 'failed' ? { code: 'invalid_pdf', message: 'Encrypted', details: {} } : null,
  } as DocumentEntity;
}

/** The service over a document in `status` whose text is `TEXT`, with only what it may call mocked. */
function serviceFor(status: DocumentStatus, passages: Partial<PassagesRepository> = {}, indexed?: boolean) {
  const documents = strictMock<DocumentsService>({ get: () => Promise.resolve(documentIn(status, indexed)) });
  const rows = strictMock<DocumentsRepository>({ findSource: () => Promise.resolve(Buffer.from('bytes')) });
  return new DocumentContentService(documents, rows, strictMock<PassagesRepository>(passages, 'passages'));
}

const textPassages: Partial<PassagesRepository> = {
  textLength: () => Promise.resolve(TEXT.length),
  pages: () => Promise.resolve([]),
  span: (_id, from, to) => Promise.resolve(TEXT.slice(from, to)),
};

async function refusal(work: Promise<unknown>): Promise<AppError> {
  const error = await work.then(
    () => null,
    (caught: unknown) => caught,
  );
  if (!(error instanceof AppError)) throw new Error(`expected an AppError, got ${String(error)}`);
  return error;
}

describe('DocumentContentService', () => {
  it('pages the text, never ending a page inside a surrogate pair', async () => {
    const service = serviceFor('ready', textPassages);
    const first = await service.text(ANONYMOUS, DATASET_ID, DOCUMENT_ID, 0, 3);
    expect(first).toEqual({
      documentId: DOCUMENT_ID,
      text: 'ab',
      offset: 0,
      nextOffset: 2,
      totalCharacters: TEXT.length,
      pages: null,
    });
    const pair = await service.text(ANONYMOUS, DATASET_ID, DOCUMENT_ID, 2, 1);
    expect([pair.text, pair.nextOffset]).toEqual(['😀', 4]);
    const last = await service.text(ANONYMOUS, DATASET_ID, DOCUMENT_ID, 4, 100);
    expect([last.text, last.nextOffset]).toEqual(['cdefgh', null]);
  });

  it('refuses an offset past the end of the text with 400 validation_error on offset', async () => {
    const error = await refusal(
      serviceFor('ready', textPassages).text(ANONYMOUS, DATASET_ID, DOCUMENT_ID, 11, 5),
    );
    expect([error.status, error.code, error.details]).toEqual([
      400,
      'validation_error',
      expect.objectContaining({ field: 'offset' }),
    ]);
  });

  it('reads the version searched while a replacement processes, and after it failed', async () => {
    for (const status of ['processing', 'failed'] as const) {
      const service = serviceFor(status, textPassages, true);
      expect((await service.text(ANONYMOUS, DATASET_ID, DOCUMENT_ID, 0, 100)).text).toBe(TEXT);
    }
  });

  it('answers 409 document_processing and document_failed before reading any chunk', async () => {
    for (const [status, code] of [
      ['processing', 'document_processing'],
      ['failed', 'document_failed'],
    ] as const) {
      const service = serviceFor(status);
      for (const read of [
        service.text(ANONYMOUS, DATASET_ID, DOCUMENT_ID, 0, 10),
        service.chunks(ANONYMOUS, DATASET_ID, DOCUMENT_ID, 0, 10),
        service.chunk(ANONYMOUS, DATASET_ID, DOCUMENT_ID, 'chk_AbCdEfGhIjKlMnOpQrStUv', 1),
      ]) {
        const error = await refusal(read);
        expect([error.status, error.code]).toEqual([409, code]);
      }
    }
    const failed = await refusal(serviceFor('failed').text(ANONYMOUS, DATASET_ID, DOCUMENT_ID, 0, 1));
    expect(failed.details).toEqual({
      document_id: DOCUMENT_ID,
      status: 'failed',
      error: { code: 'invalid_pdf', message: 'Encrypted' },
    });
  });

  it('answers 404 chunk_not_found for a malformed id without a query, and for a chunk not of the document', async () => {
    const asked: string[] = [];
    const service = serviceFor('ready', {
      around: (_documentId, chunkId) => {
        asked.push(chunkId);
        return Promise.resolve(null as ListedChunk[] | null);
      },
    });
    for (const id of ['x\u0000y', 'doc_AbCdEfGhIjKlMnOpQrStUv', 'chk_AbCdEfGhIjKlMnOpQrStUv']) {
      const error = await refusal(service.chunk(ANONYMOUS, DATASET_ID, DOCUMENT_ID, id, 1));
      expect([error.status, error.code]).toEqual([404, 'chunk_not_found']);
    }
    expect(asked).toEqual(['chk_AbCdEfGhIjKlMnOpQrStUv']);
  });

  it('sends the file of a document in any status', async () => {
    for (const status of ['processing', 'failed', 'ready'] as const) {
      const { content } = await serviceFor(status).file(ANONYMOUS, DATASET_ID, DOCUMENT_ID);
      expect(content.toString()).toBe('bytes');
    }
  });
});
