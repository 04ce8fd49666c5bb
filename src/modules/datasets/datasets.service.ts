import { isDeepStrictEqual } from 'node:util';
import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from 'pino';
import { EventOutbox } from 'src/modules/events/domain-events.js';
import { isId, newId } from 'src/common/ids/ids.js';
import { LOGGER } from 'src/common/logging/logger.js';
import { type Page } from 'src/common/pagination/pagination.js';
import { patchedMetadata } from 'src/common/validation/metadata.js';
import { TransactionRunner, type Tx } from 'src/database/transaction.js';
import { type AccountPrincipal, actorOf, type Principal } from 'src/modules/auth/auth.types.js';
import { ChunkIndexRepository } from 'src/modules/chunk-index/chunk-index.repository.js';
import { DatasetVectorIndexRepository } from 'src/modules/chunk-index/dataset-vector-index.repository.js';
import {
  type FusionChoice,
  FusionChoiceRepository,
} from 'src/modules/chunk-index/fusion-choice.repository.js';
import { IndexStateRepository } from 'src/modules/chunk-index/index-state.repository.js';
import type { DatasetEntity } from 'src/modules/datasets/dataset.entity.js';
import { type DatasetChanges, DatasetsRepository } from 'src/modules/datasets/datasets.repository.js';
import { DATASETS_PER_ACCOUNT, DatasetErrors } from 'src/modules/datasets/datasets.errors.js';
import type {
  CreateDatasetDto,
  ListDatasetsQueryDto,
  UpdateDatasetDto,
} from 'src/modules/datasets/dto/dataset.dto.js';

@Injectable()
export class DatasetsService {
  constructor(
    private readonly datasets: DatasetsRepository,
    private readonly transactions: TransactionRunner,
    private readonly chunkIndex: ChunkIndexRepository,
    private readonly events: EventOutbox,
    private readonly vectorIndexes: DatasetVectorIndexRepository,
    private readonly indexState: IndexStateRepository,
    private readonly fusionChoices: FusionChoiceRepository,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** The fusion weights chosen for each of `datasets` (none for a dataset not judged yet), by id. */
  async fusionOf(datasets: DatasetEntity[]): Promise<Map<string, FusionChoice>> {
    const choices = await this.fusionChoices.ofDatasets(datasets.map((dataset) => dataset.seq));
    const byId = new Map<string, FusionChoice>();
    for (const dataset of datasets) {
      const choice = choices.get(dataset.seq);
      if (choice) byId.set(dataset.id, choice);
    }
    return byId;
  }

  create(caller: AccountPrincipal, input: CreateDatasetDto): Promise<DatasetEntity> {
    // A grant for chosen datasets does not reach datasets created after it.
    if (caller.datasetIds !== null) throw DatasetErrors.grantRestricted();
    return this.transactions.run((tx) => this.createIn(tx, caller, input));
  }

  /**
   * A new dataset of the caller's account, with its index state and its `dataset.created` event, in
   * `tx`: under the account's lock, so that the per-account limit holds under concurrent creations (an
   * import creates its dataset so too, in the transaction that writes its documents).
   */
  async createIn(tx: Tx, caller: AccountPrincipal, input: CreateDatasetDto): Promise<DatasetEntity> {
    await this.datasets.lockAccount(tx, caller.accountId);
    if ((await this.datasets.countForAccount(tx, caller.accountId)) >= DATASETS_PER_ACCOUNT) {
      throw DatasetErrors.limitReached();
    }
    const dataset = await this.datasets.insert(tx, {
      id: newId('ds'),
      accountId: caller.accountId,
      name: input.name,
      description: input.description ?? null,
      isPublic: input.is_public ?? false,
      metadata: input.metadata ?? {},
      language: input.language ?? 'english',
    });
    await this.indexState.create(tx, dataset);
    await this.events.record(tx, caller.accountId, 'dataset.created', {
      dataset_id: dataset.id,
      name: dataset.name,
      description: dataset.description,
      is_public: dataset.isPublic,
      created_by: actorOf(caller),
    });
    return dataset;
  }

  list(caller: AccountPrincipal, query: ListDatasetsQueryDto): Promise<Page<DatasetEntity>> {
    return this.datasets.listForAccount(
      caller.accountId,
      query.sort,
      query.limit,
      query.offset,
      caller.datasetIds,
    );
  }

  /** The account's own datasets, and public datasets to anyone; anything else looks missing. */
  async get(caller: Principal, datasetId: string): Promise<DatasetEntity> {
    const dataset =
      isId('ds', datasetId) && covers(caller, datasetId)
        ? await this.datasets.findReadable(datasetId, caller.accountId)
        : null;
    if (!dataset) throw DatasetErrors.notFound(datasetId);
    return dataset;
  }

  update(caller: AccountPrincipal, datasetId: string, input: UpdateDatasetDto): Promise<DatasetEntity> {
    return this.transactions.run(async (tx) => {
      const dataset = await this.findOwnedForUpdate(tx, caller, datasetId);
      const changes: DatasetChanges = {};
      if (input.name !== undefined) changes.name = input.name;
      if (input.description !== undefined) changes.description = input.description;
      if (input.is_public !== undefined) changes.isPublic = input.is_public;
      if (input.metadata !== undefined) changes.metadata = patchedMetadata(dataset.metadata, input.metadata);
      if (Object.keys(changes).length === 0) return dataset;
      const updated = await this.datasets.update(tx, dataset, changes);
      const changed = changedFields(dataset, updated);
      if (Object.keys(changed).length > 0) {
        await this.events.record(tx, caller.accountId, 'dataset.updated', {
          dataset_id: dataset.id,
          changes: changed,
          updated_by: actorOf(caller),
        });
      }
      return updated;
    });
  }

  /**
   * Deletes the dataset and, through the same transaction, everything in it; then, in the background,
   * its own vector index (`DROP INDEX CONCURRENTLY` waits for every transaction using `chunks`; one
   * left behind is dropped at the next worker start).
   */
  async delete(caller: AccountPrincipal, datasetId: string): Promise<void> {
    const seq = await this.transactions.run(async (tx) => {
      const dataset = await this.findOwnedForChunkChanges(tx, caller, datasetId); // its chunks go too
      await this.events.record(tx, caller.accountId, 'dataset.deleted', {
        dataset_id: dataset.id,
        document_count: dataset.documentCount,
        deleted_by: actorOf(caller),
      });
      await this.datasets.delete(tx, dataset);
      return dataset.seq;
    });
    this.vectorIndexes.dropStale(seq).catch((err: unknown) => {
      this.logger.warn(
        { err, dataset_id: datasetId },
        'could not drop the vector index of a deleted dataset',
      );
    });
  }

  /**
   * The caller's own dataset, locked until the transaction ends (also for the documents it holds).
   * Another account's public dataset is visible, so changing it is 403; another account's private
   * dataset is indistinguishable from a missing one.
   */
  async findOwnedForUpdate(tx: Tx, caller: AccountPrincipal, datasetId: string): Promise<DatasetEntity> {
    if (!isId('ds', datasetId) || !covers(caller, datasetId)) throw DatasetErrors.notFound(datasetId);
    const dataset = await this.datasets.findReadableForUpdate(tx, datasetId, caller.accountId);
    if (!dataset) throw DatasetErrors.notFound(datasetId);
    if (dataset.accountId !== caller.accountId) throw DatasetErrors.notOwner(datasetId);
    return dataset;
  }

  /** The caller's own dataset, read without a lock: the answers of `findOwnedForUpdate`. */
  async getOwned(caller: AccountPrincipal, datasetId: string): Promise<DatasetEntity> {
    const dataset = await this.get(caller, datasetId);
    if (dataset.accountId !== caller.accountId) throw DatasetErrors.notOwner(datasetId);
    return dataset;
  }

  /**
   * `findOwnedForUpdate` for a transaction that changes the dataset's chunks: the dataset's chunk lock
   * first (`ChunkIndexRepository.lockDataset`), then its row, the order every writer of the chunks follows.
   */
  async findOwnedForChunkChanges(
    tx: Tx,
    caller: AccountPrincipal,
    datasetId: string,
  ): Promise<DatasetEntity> {
    // Not an id: no lock to take (a U+0000 in it would fail the lock's query, as a 500).
    if (!isId('ds', datasetId) || !covers(caller, datasetId)) throw DatasetErrors.notFound(datasetId);
    await this.chunkIndex.lockDataset(tx, datasetId);
    return this.findOwnedForUpdate(tx, caller, datasetId);
  }
}

/**
 * Whether the credential may touch the dataset at all: an OAuth grant for chosen datasets covers those
 * alone, and anything else looks missing to it, as another account's private dataset does.
 */
function covers(caller: Principal, datasetId: string): boolean {
  return caller.datasetIds === null || caller.datasetIds.includes(datasetId);
}

/** The fields an update changed, by their API names, with their new values (metadata as merged). */
function changedFields(before: DatasetEntity, after: DatasetEntity): Record<string, unknown> {
  const fields = {
    name: [before.name, after.name],
    description: [before.description, after.description],
    is_public: [before.isPublic, after.isPublic],
    metadata: [before.metadata, after.metadata],
  } as const;
  return Object.fromEntries(
    Object.entries(fields)
      .filter(([, [old, now]]) => !isDeepStrictEqual(old, now))
      .map(([field, [, now]]) => [field, now]),
  );
}
