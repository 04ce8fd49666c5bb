import { jest } from '@jest/globals';
import { AppError } from 'src/common/errors/app-error.js';
import type { TransactionRunner, Tx } from 'src/database/transaction.js';
import { type AccountPrincipal, AuthTier, SCOPES } from 'src/modules/auth/auth.types.js';
import type { DatasetEntity } from 'src/modules/datasets/dataset.entity.js';
import type { DatasetsRepository } from 'src/modules/datasets/datasets.repository.js';
import { DatasetsService } from 'src/modules/datasets/datasets.service.js';
import type { EventOutbox } from 'src/modules/events/domain-events.js';
import { strictMock } from '../../../test/utils/strict-mock.js';
import type { ChunkIndexRepository } from 'src/modules/chunk-index/chunk-index.repository.js';
import type { DatasetVectorIndexRepository } from 'src/modules/chunk-index/dataset-vector-index.repository.js';
import type { FusionChoiceRepository } from 'src/modules/chunk-index/fusion-choice.repository.js';
import type { IndexStateRepository } from 'src/modules/chunk-index/index-state.repository.js';
import { pino } from 'pino';

const caller: AccountPrincipal = {
  tier: AuthTier.ApiKey,
  accountId: 'acc_me',
  credentialId: 'key_1',
  scopes: SCOPES,
  userId: null,
  datasetIds: null,
  audience: null,
};
const DATASET_ID = 'ds_AbCdEfGhIjKlMnOpQrStUv';
const tx = {} as Tx;
const transactions = strictMock<TransactionRunner>({ run: (work) => work(tx) });
const noChunkIndex = strictMock<ChunkIndexRepository>({});
const noVectorIndexes = strictMock<DatasetVectorIndexRepository>({});
/** The index state a new dataset gets, made in its transaction. */
const indexState = strictMock<IndexStateRepository>({ create: () => Promise.resolve() });
const noFusionChoices = strictMock<FusionChoiceRepository>({});
const silent = pino({ level: 'silent' });
const recorded: [string, unknown][] = [];
const outbox = strictMock<EventOutbox>({
  record: (_tx, _accountId, name, data) => {
    recorded.push([name, data]);
    return Promise.resolve();
  },
});

function dataset(overrides: Partial<DatasetEntity> = {}): DatasetEntity {
  return {
    id: DATASET_ID,
    accountId: 'acc_me',
    name: 'Docs',
    description: null,
    isPublic: false,
    metadata: {},
    documentCount: 0,
    seq: '1',
    language: 'english',
    createdAt: new Date(),
    updatedAt: new Date(),
    ...overrides,
  };
}

async function rejection(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(error instanceof AppError)) throw new Error(`expected an AppError, got ${String(error)}`);
  return error;
}

describe('DatasetsService', () => {
  it('creates under the account lock and refuses the 1,001st dataset', async () => {
    const lockAccount = jest.fn(() => Promise.resolve());
    const insert = jest.fn(() => Promise.resolve(dataset()));
    const repository = strictMock<DatasetsRepository>({
      lockAccount,
      countForAccount: () => Promise.resolve(1000),
      insert,
    });
    const error = await rejection(
      new DatasetsService(
        repository,
        transactions,
        noChunkIndex,
        outbox,
        noVectorIndexes,
        indexState,
        noFusionChoices,
        silent,
      ).create(caller, {
        name: 'One more',
      }),
    );
    expect(error.code).toBe('dataset_limit_reached');
    expect(lockAccount).toHaveBeenCalledWith(tx, 'acc_me');
    expect(insert).not.toHaveBeenCalled();
  });

  it('fills the defaults of a new dataset', async () => {
    const insert = jest.fn((_tx: Tx, row: object) => Promise.resolve(dataset(row)));
    const repository = strictMock<DatasetsRepository>({
      lockAccount: () => Promise.resolve(),
      countForAccount: () => Promise.resolve(0),
      insert,
    });
    await new DatasetsService(
      repository,
      transactions,
      noChunkIndex,
      outbox,
      noVectorIndexes,
      indexState,
      noFusionChoices,
      silent,
    ).create(caller, {
      name: 'Docs',
    });
    expect(insert).toHaveBeenCalledWith(tx, {
      id: expect.stringMatching(/^ds_/),
      accountId: 'acc_me',
      name: 'Docs',
      description: null,
      isPublic: false,
      metadata: {},
      language: 'english',
    });
    // Its event, in the same transaction, naming the key that created it.
    expect(recorded.at(-1)).toEqual([
      'dataset.created',
      {
        dataset_id: expect.stringMatching(/^ds_/),
        name: 'Docs',
        description: null,
        is_public: false,
        created_by: caller.credentialId,
      },
    ]);
  });

  it('answers 404 without a query for an id that is not a dataset id', async () => {
    const service = new DatasetsService(
      strictMock<DatasetsRepository>({}),
      transactions,
      noChunkIndex,
      outbox,
      noVectorIndexes,
      indexState,
      noFusionChoices,
      silent,
    );
    expect((await rejection(service.get(caller, 'doc_AbCdEfGhIjKlMnOpQrStUv'))).code).toBe(
      'dataset_not_found',
    );
  });

  it('tells a visible public dataset of another account (403) from an invisible one (404) on update', async () => {
    const findReadableForUpdate = jest.fn<DatasetsRepository['findReadableForUpdate']>();
    const repository = strictMock<DatasetsRepository>({ findReadableForUpdate });
    const service = new DatasetsService(
      repository,
      transactions,
      noChunkIndex,
      outbox,
      noVectorIndexes,
      indexState,
      noFusionChoices,
      silent,
    );

    findReadableForUpdate.mockResolvedValueOnce(dataset({ accountId: 'acc_other', isPublic: true }));
    expect((await rejection(service.update(caller, DATASET_ID, { name: 'x' }))).code).toBe('forbidden');
    findReadableForUpdate.mockResolvedValueOnce(null);
    expect((await rejection(service.update(caller, DATASET_ID, { name: 'x' }))).code).toBe(
      'dataset_not_found',
    );
    expect(findReadableForUpdate).toHaveBeenCalledWith(tx, DATASET_ID, 'acc_me');
  });

  it('merges metadata and refuses a merge over the key limit without writing', async () => {
    const update = jest.fn(() => Promise.resolve(dataset()));
    const current = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`a${i}`, i]));
    const repository = strictMock<DatasetsRepository>({
      findReadableForUpdate: () => Promise.resolve(dataset({ metadata: current })),
      update,
    });
    const service = new DatasetsService(
      repository,
      transactions,
      noChunkIndex,
      outbox,
      noVectorIndexes,
      indexState,
      noFusionChoices,
      silent,
    );
    const extra = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`b${i}`, i]));
    expect((await rejection(service.update(caller, DATASET_ID, { metadata: extra }))).code).toBe(
      'invalid_metadata',
    );
    expect(update).not.toHaveBeenCalled();

    await service.update(caller, DATASET_ID, { metadata: { a0: null, b0: 'new' } });
    expect(update).toHaveBeenCalledWith(tx, expect.objectContaining({ id: DATASET_ID }), {
      metadata: expect.objectContaining({ a1: 1, b0: 'new' }) as object,
    });
    const [[, , changes]] = update.mock.calls as unknown as [[Tx, string, { metadata: object }]];
    expect(changes.metadata).not.toHaveProperty('a0');
  });
});
