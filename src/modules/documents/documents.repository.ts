import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, In } from 'typeorm';
import type { ProcessingErrorPayload } from 'src/modules/events/domain-events.js';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity.js';
import type { Page } from 'src/common/pagination/pagination.js';
import { pagedQuery } from 'src/database/paged-query.js';
import type { Tx } from 'src/database/transaction.js';
import {
  DocumentEntity,
  type DocumentStatus,
  DocumentSourceEntity,
  type ProcessingStage,
} from 'src/modules/documents/document.entity.js';

export type NewDocument = Pick<
  DocumentEntity,
  'id' | 'datasetId' | 'datasetSeq' | 'filename' | 'kind' | 'mediaType' | 'sizeBytes' | 'metadata'
>;

/** What a replacement changes of a document: its file, and its metadata when one was sent. */
export type NewVersion = Pick<DocumentEntity, 'filename' | 'kind' | 'mediaType' | 'sizeBytes'> & {
  metadata?: Record<string, unknown>;
};

/** A new run of a document: the columns every restart into `processing` sets. */
const NEW_RUN = {
  status: 'processing',
  recoveries: 0,
  error: null,
  progress: { stage: 'upload', percent: 0 },
  processingStartedAt: () => 'now()',
  heartbeatAt: () => 'now()',
  processedAt: null,
  processingTimeMs: null,
} as const;

/** Identifies one run of the pipeline for one document (and its dataset's `seq`, its content's key). */
export interface Run {
  documentId: string;
  datasetSeq: string;
  generation: number;
}

/** A dataset as its documents are addressed: by id, and by `seq` where a statement locks or writes. */
export type DatasetKey = { id: string; seq: string };

export interface StaleRun {
  id: string;
  datasetId: string;
  datasetSeq: string;
  generation: number;
  recoveries: number;
}

// Statements that lock or write documents name the dataset's seq: on Citus they run in its shard,
// where row locks are taken (a statement over several shards cannot lock rows).
const STILL_RUNNING = `dataset_seq = $3 AND id = $1 AND generation = $2 AND status = 'processing'`;

/** A document's key: on Citus, its dataset's seq places it. */
function keyOf(document: Pick<DocumentEntity, 'id' | 'datasetSeq'>) {
  return { id: document.id, datasetSeq: document.datasetSeq };
}

/**
 * A run's end, set as the document leaves `processing` (with `FROM ${RUN_ENDED}`): `processed_at` is
 * the clock as the statement runs, not the transaction's start (a large document's chunks take seconds
 * to index before it), and `processing_time_ms` runs from the run's start to it, queue wait included
 * (docs/decisions.md), both on the database's clock. The time is held within an integer's range: a
 * document left processing for 25 days (no worker running) must still be able to fail.
 */
const PROCESSING_TIME = `processed_at = ended.at,
  processing_time_ms = least(greatest(round(extract(epoch FROM ended.at - processing_started_at) * 1000), 0), 2147483647)::int`;
const RUN_ENDED = `(SELECT clock_timestamp() AS at) ended`;

/**
 * Documents and their sources, and every change of a document's status: its upload and restart into
 * `processing`, its run's progress, and its end, `ready` or `failed`.
 */
@Injectable()
export class DocumentsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async insert(tx: Tx, document: NewDocument, content: Buffer): Promise<DocumentEntity> {
    const documents = tx.getRepository(DocumentEntity);
    await documents.insert({
      ...document,
      status: 'processing',
      progress: { stage: 'upload', percent: 0 },
    } as QueryDeepPartialEntity<DocumentEntity>);
    await tx
      .getRepository(DocumentSourceEntity)
      .insert({ documentId: document.id, datasetSeq: document.datasetSeq, content });
    return documents.findOneByOrFail(keyOf(document));
  }

  /**
   * Inserts several documents with their sources, in two multi-row statements; returns the documents
   * in the order given.
   */
  async insertMany(tx: Tx, items: { document: NewDocument; content: Buffer }[]): Promise<DocumentEntity[]> {
    if (items.length === 0) return [];
    const documents = tx.getRepository(DocumentEntity);
    await documents.insert(
      items.map(
        ({ document }) =>
          ({
            ...document,
            status: 'processing',
            progress: { stage: 'upload', percent: 0 },
          }) as QueryDeepPartialEntity<DocumentEntity>,
      ),
    );
    await tx.getRepository(DocumentSourceEntity).insert(
      items.map(({ document, content }) => ({
        documentId: document.id,
        datasetSeq: document.datasetSeq,
        content,
      })),
    );
    const ids = items.map(({ document }) => document.id);
    const rows = await documents.findBy({ id: In(ids), datasetSeq: items[0].document.datasetSeq });
    const byId = new Map(rows.map((row) => [row.id, row]));
    return ids.map((id) => byId.get(id) as DocumentEntity);
  }

  /** The `seq` of a document's dataset, or null for an unknown document. */
  async datasetSeqOf(documentId: string): Promise<string | null> {
    const [row] = await this.db.query<{ seq: string }[]>(
      `SELECT dataset_seq::text AS seq FROM documents WHERE id = $1`,
      [documentId],
    );
    return row?.seq ?? null;
  }

  /** The dataset a document belongs to, or null for an unknown document. */
  async datasetIdOf(documentId: string): Promise<string | null> {
    const [row] = await this.db.query<{ dataset_id: string }[]>(
      `SELECT dataset_id FROM documents WHERE id = $1`,
      [documentId],
    );
    return row?.dataset_id ?? null;
  }

  find(dataset: DatasetKey, documentId: string): Promise<DocumentEntity | null> {
    return this.db
      .getRepository(DocumentEntity)
      .findOneBy({ id: documentId, datasetSeq: dataset.seq, datasetId: dataset.id });
  }

  /** The original bytes of a document of the dataset, as uploaded; null for an unknown document. */
  async findSource(dataset: DatasetKey, documentId: string): Promise<Buffer | null> {
    const [row] = await this.db.query<{ content: Buffer }[]>(
      `SELECT s.content FROM document_sources s JOIN documents d ON d.dataset_seq = s.dataset_seq AND d.id = s.document_id
        WHERE s.dataset_seq = $3 AND s.document_id = $1 AND d.dataset_id = $2`,
      [documentId, dataset.id, dataset.seq],
    );
    return row?.content ?? null;
  }

  /** A page of the dataset's documents in the order of their ids, after `afterId`, in the caller's snapshot. */
  pageInOrder(tx: Tx, datasetId: string, afterId: string, limit: number): Promise<DocumentEntity[]> {
    return tx
      .getRepository(DocumentEntity)
      .createQueryBuilder('d')
      .where('d.dataset_id = :datasetId AND d.id > :afterId', { datasetId, afterId })
      .orderBy('d.id', 'ASC')
      .limit(limit)
      .getMany();
  }

  /** How many documents the dataset holds, in the caller's snapshot. */
  async countIn(tx: Tx, datasetId: string): Promise<number> {
    const [row] = await tx.query<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM documents WHERE dataset_id = $1`,
      [datasetId],
    );
    return row.n;
  }

  /** `findSource` in the caller's transaction (an export reads one snapshot). */
  async sourceIn(tx: Tx, document: Pick<DocumentEntity, 'id' | 'datasetSeq'>): Promise<Buffer | null> {
    const [row] = await tx.query<{ content: Buffer }[]>(
      `SELECT content FROM document_sources WHERE dataset_seq = $2 AND document_id = $1`,
      [document.id, document.datasetSeq],
    );
    return row?.content ?? null;
  }

  findForUpdate(tx: Tx, dataset: DatasetKey, documentId: string): Promise<DocumentEntity | null> {
    return tx
      .getRepository(DocumentEntity)
      .createQueryBuilder('d')
      .setLock('pessimistic_write')
      .where('d.dataset_seq = :seq AND d.id = :documentId AND d.dataset_id = :datasetId', {
        seq: dataset.seq,
        documentId,
        datasetId: dataset.id,
      })
      .getOne();
  }

  async list(
    datasetId: string,
    status: DocumentStatus | undefined,
    limit: number,
    offset: number,
  ): Promise<Page<DocumentEntity>> {
    const query = this.db
      .getRepository(DocumentEntity)
      .createQueryBuilder('d')
      .where('d.dataset_id = :datasetId', { datasetId });
    if (status) query.andWhere('d.status = :status', { status });
    return pagedQuery(query, { 'd.created_at': 'DESC', 'd.id': 'DESC' }, limit, offset);
  }

  /** Deletes the document and its source; its chunks must have gone first (`ChunkIndexRepository`). */
  async delete(tx: Tx, document: DocumentEntity): Promise<void> {
    await tx.getRepository(DocumentEntity).delete(keyOf(document));
  }

  /**
   * Sets the document's metadata, and nothing else: a run under way keeps its status and progress, and
   * its end (`markReady`, `fail`) writes neither metadata nor anything this changes.
   */
  async setMetadata(
    tx: Tx,
    document: DocumentEntity,
    metadata: Record<string, unknown>,
  ): Promise<DocumentEntity> {
    const documents = tx.getRepository(DocumentEntity);
    await documents.update(keyOf(document), { metadata } as QueryDeepPartialEntity<DocumentEntity>);
    return documents.findOneByOrFail(keyOf(document));
  }

  /** Back to processing for another run, its chunks removed (`DocumentsService.reprocess`). */
  async restart(tx: Tx, document: DocumentEntity): Promise<DocumentEntity> {
    const documents = tx.getRepository(DocumentEntity);
    await documents.update(keyOf(document), {
      ...NEW_RUN,
      generation: document.generation + 1,
      chunksCreated: null,
    });
    return documents.findOneByOrFail(keyOf(document));
  }

  /**
   * A new version of the document, with its bytes, in a new run; the chunks of the version searched
   * stay, and so does `chunks_created`, until the run indexes its own (`DocumentsService.replace`).
   */
  async replace(
    tx: Tx,
    document: DocumentEntity,
    version: NewVersion,
    content: Buffer,
  ): Promise<DocumentEntity> {
    const documents = tx.getRepository(DocumentEntity);
    await documents.update(keyOf(document), {
      ...NEW_RUN,
      ...version,
      generation: document.generation + 1,
    } as QueryDeepPartialEntity<DocumentEntity>);
    await tx
      .getRepository(DocumentSourceEntity)
      .update({ documentId: document.id, datasetSeq: document.datasetSeq }, { content });
    return documents.findOneByOrFail(keyOf(document));
  }

  /**
   * The document and its content, if this run is still the current one and still processing (null when
   * it is gone, with its dataset or alone). A document is deleted with its dataset, and one statement
   * sees both or neither; a deletion after it is caught by `lockRun`, and the run then writes nothing.
   */
  async loadRun(run: Run): Promise<{ document: DocumentEntity; content: Buffer } | null> {
    const [row] = await this.db.query<(DocumentEntity & { content: Buffer })[]>(
      `SELECT d.id, d.dataset_id AS "datasetId", d.kind, d.filename, d.metadata,
              d.chunks_created AS "chunksCreated", s.content
         FROM documents d JOIN document_sources s ON s.dataset_seq = d.dataset_seq AND s.document_id = d.id
        WHERE d.dataset_seq = $3 AND d.id = $1 AND d.generation = $2 AND d.status = 'processing'`,
      [run.documentId, run.generation, run.datasetSeq],
    );
    if (!row) return null;
    const { content, ...document } = row;
    return { document, content };
  }

  /**
   * Records the stage each run is in, in one statement; also their heartbeats, which tell the recovery
   * sweep they are alive. A run no longer current is left as it is, and so is one whose document is
   * locked (being indexed, deleted or restarted): its progress does not wait for that.
   */
  async setProgress(updates: (Run & { stage: ProcessingStage; percent: number })[]): Promise<void> {
    // A statement a dataset: on Citus, rows are locked only by a statement within one shard.
    const byDataset = new Map<string, typeof updates>();
    for (const update of updates) {
      const ofDataset = byDataset.get(update.datasetSeq);
      if (ofDataset) ofDataset.push(update);
      else byDataset.set(update.datasetSeq, [update]);
    }
    for (const [datasetSeq, ofDataset] of byDataset) {
      await this.db.query(
        `UPDATE documents d
            SET progress = u.progress, heartbeat_at = now()
           FROM unnest($1::text[], $2::int[], $3::jsonb[]) AS u(id, generation, progress)
          WHERE d.dataset_seq = $4 AND d.id = u.id AND d.generation = u.generation AND d.status = 'processing'
            AND d.id IN (SELECT id FROM documents WHERE dataset_seq = $4 AND id = ANY($1::text[])
                            FOR UPDATE SKIP LOCKED)`,
        [
          ofDataset.map((update) => update.documentId),
          ofDataset.map((update) => update.generation),
          // Built here: Citus refuses a stable function of the rows' columns in an UPDATE.
          ofDataset.map(({ stage, percent }) => JSON.stringify({ stage, percent: Math.round(percent) })),
          datasetSeq,
        ],
      );
    }
  }

  /** Marks a run failed with a code; returns its dataset id, or null when the run was no longer current. */
  async fail(tx: Tx, run: Run, error: ProcessingErrorPayload): Promise<string | null> {
    const [rows] = await tx.query<[{ dataset_id: string }[], number]>(
      `UPDATE documents
          SET status = 'failed', error = $4, ${PROCESSING_TIME}, progress = NULL
         FROM ${RUN_ENDED}
        WHERE ${STILL_RUNNING}
        RETURNING dataset_id`,
      [run.documentId, run.generation, run.datasetSeq, error],
    );
    return rows[0]?.dataset_id ?? null;
  }

  /** Processing documents whose run has not reported for `seconds`. */
  staleRuns(seconds: number, limit: number): Promise<StaleRun[]> {
    return this.db.query<StaleRun[]>(
      `SELECT id, dataset_id AS "datasetId", dataset_seq::text AS "datasetSeq", generation, recoveries
         FROM documents
        WHERE status = 'processing' AND heartbeat_at < now() - make_interval(secs => $1)
        ORDER BY heartbeat_at
        LIMIT $2`,
      [seconds, limit],
    );
  }

  /** Counts a restart of a run whose worker died; false if the run moved on meanwhile. */
  async recordRecovery(run: Run, recoveries: number): Promise<boolean> {
    const [, affected] = await this.db.query<[unknown, number]>(
      `UPDATE documents SET recoveries = $4 + 1, heartbeat_at = now()
        WHERE ${STILL_RUNNING} AND recoveries = $4`,
      [run.documentId, run.generation, run.datasetSeq, recoveries],
    );
    return affected > 0;
  }

  /**
   * Locks the runs' documents until the transaction ends, in the order of their ids (so that two
   * transactions locking several never deadlock); the runs still current, that is not deleted,
   * restarted or replaced meanwhile, each with whether its document has chunks in the index (a
   * version it replaces).
   */
  async lockRuns(tx: Tx, datasetSeq: string, runs: Run[]): Promise<(Run & { hasChunks: boolean })[]> {
    return tx.query<(Run & { hasChunks: boolean })[]>(
      `SELECT d.id AS "documentId", d.dataset_seq::text AS "datasetSeq", d.generation,
              d.chunks_created IS NOT NULL AS "hasChunks"
         FROM documents d JOIN unnest($1::text[], $2::int[]) AS r(id, generation)
              ON d.id = r.id AND d.generation = r.generation
        WHERE d.dataset_seq = $3 AND d.status = 'processing'
        ORDER BY d.id
          FOR UPDATE OF d`,
      [runs.map((run) => run.documentId), runs.map((run) => run.generation), datasetSeq],
    );
  }

  /** Records the chunks documents have in the index outside a run's end (an import's documents). */
  async setIndexedChunks(
    tx: Tx,
    datasetSeq: string,
    documents: { documentId: string; chunks: number }[],
  ): Promise<void> {
    await tx.query(
      `UPDATE documents d SET chunks_created = u.chunks
         FROM unnest($1::text[], $2::int[]) AS u(id, chunks) WHERE d.dataset_seq = $3 AND d.id = u.id`,
      [
        documents.map((document) => document.documentId),
        documents.map((document) => document.chunks),
        datasetSeq,
      ],
    );
  }

  /**
   * Marks the runs' documents ready, each with its chunk count and how many of them were embedded and
   * reused (null for a run without vectors); returns each one's processing time by document id (a run
   * no longer current is left out).
   */
  async markReady(
    tx: Tx,
    datasetSeq: string,
    runs: (Run & { chunks: number; embedded: number | null; reused: number | null })[],
  ): Promise<Map<string, number>> {
    const rows = await tx.query<{ id: string; processing_time_ms: number }[]>(
      `WITH ready AS (
         UPDATE documents d
            SET status = 'ready', chunks_created = r.chunks, chunks_embedded = r.embedded, chunks_reused = r.reused,
                ${PROCESSING_TIME}, progress = NULL, error = NULL
           FROM ${RUN_ENDED},
                unnest($1::text[], $2::int[], $3::int[], $4::int[], $5::int[]) AS r(id, generation, chunks, embedded, reused)
          WHERE d.dataset_seq = $6 AND d.id = r.id AND d.generation = r.generation AND d.status = 'processing'
          RETURNING d.id, d.processing_time_ms
       )
       SELECT * FROM ready`,
      [
        runs.map((run) => run.documentId),
        runs.map((run) => run.generation),
        runs.map((run) => run.chunks),
        runs.map((run) => run.embedded),
        runs.map((run) => run.reused),
        datasetSeq,
      ],
    );
    return new Map(rows.map((row) => [row.id, row.processing_time_ms]));
  }
}
