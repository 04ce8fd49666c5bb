import type { DatasetDirectory } from 'src/modules/auth/oauth/dataset-directory.seam.js';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity.js';
import type { Page } from 'src/common/pagination/pagination.js';
import { pagedQuery } from 'src/database/paged-query.js';
import { entityColumns } from 'src/database/entity-columns.js';
import { isUniqueViolation } from 'src/database/unique-violation.js';
import type { Tx } from 'src/database/transaction.js';
import { DatasetEntity, type Metadata } from 'src/modules/datasets/dataset.entity.js';
import { DatasetErrors } from 'src/modules/datasets/datasets.errors.js';
import type { DatasetSort } from 'src/modules/datasets/dto/dataset.dto.js';

export interface NewDataset {
  id: string;
  accountId: string;
  name: string;
  description: string | null;
  isPublic: boolean;
  metadata: Metadata;
  language: string;
}

export type DatasetChanges = Partial<Pick<DatasetEntity, 'name' | 'description' | 'isPublic' | 'metadata'>>;

/** Equal keys are ordered by id, so that pages never overlap or skip rows. */
const ORDER_BY: Record<DatasetSort, Record<string, 'ASC' | 'DESC'>> = {
  name: { 'lower(d.name)': 'ASC', 'd.id': 'ASC' },
  '-name': { 'lower(d.name)': 'DESC', 'd.id': 'DESC' },
  created_at: { 'd.created_at': 'ASC', 'd.id': 'ASC' },
  '-created_at': { 'd.created_at': 'DESC', 'd.id': 'DESC' },
};

const NAME_UNIQUE_INDEX = 'datasets_account_name_key';

function isNameConflict(error: unknown): boolean {
  return isUniqueViolation(error, NAME_UNIQUE_INDEX);
}

@Injectable()
export class DatasetsRepository implements DatasetDirectory {
  /** The dataset's columns, for the lookup every search makes. */
  private readonly columns: string;

  constructor(@InjectDataSource() private readonly db: DataSource) {
    this.columns = entityColumns(db, DatasetEntity, 'd');
  }

  /**
   * Takes the account's row lock for the rest of the transaction: creations in one account queue up
   * behind each other, so the per-account count they check cannot be raced past.
   */
  async lockAccount(tx: Tx, accountId: string): Promise<void> {
    // NO KEY UPDATE: serialises creations without blocking inserts that reference the account.
    await tx.query('SELECT 1 FROM accounts WHERE id = $1 FOR NO KEY UPDATE', [accountId]);
  }

  countForAccount(tx: Tx, accountId: string): Promise<number> {
    return tx.getRepository(DatasetEntity).countBy({ accountId });
  }

  async insert(tx: Tx, dataset: NewDataset): Promise<DatasetEntity> {
    const repository = tx.getRepository(DatasetEntity);
    try {
      await repository.insert(dataset as QueryDeepPartialEntity<DatasetEntity>);
    } catch (error) {
      if (isNameConflict(error)) throw DatasetErrors.nameConflict(dataset.name);
      throw error;
    }
    return repository.findOneByOrFail({ id: dataset.id });
  }

  /**
   * What a dataset's documents are indexed with and whose events they are: its key in the index, its
   * text search configuration, its account; null when it is gone.
   */
  async indexTarget(
    tx: Tx,
    datasetId: string,
  ): Promise<{ seq: string; language: string; accountId: string } | null> {
    const [row] = await tx.query<{ seq: string; language: string; accountId: string }[]>(
      `SELECT seq, language::text AS language, account_id AS "accountId" FROM datasets WHERE id = $1`,
      [datasetId],
    );
    return row ?? null;
  }

  /** A dataset the caller may read: its own, or any public one. */
  async findReadable(datasetId: string, accountId: string | null): Promise<DatasetEntity | null> {
    const [dataset] = await this.db.query<DatasetEntity[]>(
      `SELECT ${this.columns} FROM datasets d WHERE d.id = $1 AND (d.account_id = $2 OR d.is_public)`,
      [datasetId, accountId],
    );
    return dataset ?? null;
  }

  /**
   * A dataset the caller may read, its row locked until the transaction ends. `FOR NO KEY UPDATE`: it
   * does not wait for the chunks being written into the dataset, whose foreign keys hold key-share
   * locks on the row (see `ChunkIndexRepository.lockDataset`). Everything happens on the transaction's own
   * connection: a second pool connection here could wait forever on a full pool.
   */
  findReadableForUpdate(tx: Tx, datasetId: string, accountId: string): Promise<DatasetEntity | null> {
    return tx
      .getRepository(DatasetEntity)
      .createQueryBuilder('d')
      .setLock('for_no_key_update')
      .where('d.id = :datasetId', { datasetId })
      .andWhere('(d.account_id = :accountId OR d.is_public)', { accountId })
      .getOne();
  }

  /** Every dataset of the account by name, for the OAuth consent page (DatasetDirectory). */
  namesOf(accountId: string): Promise<{ id: string; name: string }[]> {
    return this.db.query<{ id: string; name: string }[]>(
      `SELECT id, name FROM datasets WHERE account_id = $1 ORDER BY lower(name), id`,
      [accountId],
    );
  }

  async listForAccount(
    accountId: string,
    sort: DatasetSort,
    limit: number,
    offset: number,
    /** Only these (an OAuth grant for chosen datasets); null: all of the account's. */
    ids: readonly string[] | null = null,
  ): Promise<Page<DatasetEntity>> {
    const query = this.db
      .getRepository(DatasetEntity)
      .createQueryBuilder('d')
      .where('d.account_id = :accountId', { accountId });
    if (ids !== null) query.andWhere('d.id = ANY(:ids)', { ids });
    return pagedQuery(query, ORDER_BY[sort], limit, offset);
  }

  async update(tx: Tx, dataset: DatasetEntity, changes: DatasetChanges): Promise<DatasetEntity> {
    const where = { id: dataset.id, accountId: dataset.accountId };
    try {
      await tx
        .getRepository(DatasetEntity)
        .update(where, { ...changes, updatedAt: () => 'now()' } as QueryDeepPartialEntity<DatasetEntity>);
    } catch (error) {
      if (isNameConflict(error)) throw DatasetErrors.nameConflict(changes.name ?? '');
      throw error;
    }
    return tx.getRepository(DatasetEntity).findOneByOrFail(where);
  }

  /** Keeps `document_count` exact: called in the transaction that adds or removes documents. */
  async adjustDocumentCount(tx: Tx, datasetId: string, delta: number): Promise<void> {
    await tx.query('UPDATE datasets SET document_count = document_count + $2 WHERE id = $1', [
      datasetId,
      delta,
    ]);
  }

  /**
   * Deletes the dataset; its content goes with it by foreign keys, but for the postings, which have
   * none (they are written only beside their chunks) and go first.
   */
  async delete(tx: Tx, dataset: DatasetEntity): Promise<void> {
    await tx.query('DELETE FROM chunk_terms WHERE dataset_seq = $1', [dataset.seq]);
    await tx.getRepository(DatasetEntity).delete({ id: dataset.id, accountId: dataset.accountId });
  }
}
