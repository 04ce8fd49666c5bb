import { Injectable } from '@nestjs/common';
import { newId } from 'src/common/ids/ids.js';
import type { Tx } from 'src/database/transaction.js';

export interface ProcessingErrorPayload {
  code: string;
  message: string;
  details: Record<string, unknown>;
}

/** The contract's events (Events section) and the fields of their `data`. */
export interface DomainEventMap {
  'document.uploaded': {
    document_id: string;
    dataset_id: string;
    filename: string | null;
    size_bytes: number;
    status: 'processing';
    metadata: Record<string, unknown>;
  };
  'document.processed': {
    document_id: string;
    dataset_id: string;
    chunks_created: number;
    processing_time_ms: number;
    status: 'ready';
    embedding_model: string | null;
  };
  'document.processing_failed': { document_id: string; dataset_id: string; error: ProcessingErrorPayload };
  'document.deleted': { document_id: string; dataset_id: string; deleted_by: string };
  /**
   * Beyond the contract: a document changed in place, its id kept. `changes` holds the new `metadata`
   * when it changed, and `content` when a new version replaced the document's file or text (PUT), which
   * is then processing; its end is a `document.processed` or `document.processing_failed` as for an upload.
   */
  'document.updated': {
    document_id: string;
    dataset_id: string;
    changes: {
      metadata?: Record<string, unknown>;
      content?: { filename: string | null; size_bytes: number; status: 'processing' };
    };
    updated_by: string;
  };
  'dataset.created': {
    dataset_id: string;
    name: string;
    description: string | null;
    is_public: boolean;
    created_by: string;
  };
  'dataset.updated': { dataset_id: string; changes: Record<string, unknown>; updated_by: string };
  'dataset.deleted': { dataset_id: string; document_count: number; deleted_by: string };
}

export type DomainEventName = keyof DomainEventMap;

/**
 * The outbox of the account's events: each is written in the transaction of the change that causes
 * it, so that a change and its event commit together or not at all, and none is lost when a process
 * dies after the commit. Webhook delivery reads them from there (`OutboxDispatchService`).
 */
@Injectable()
export class EventOutbox {
  /**
   * Records an event of `accountId`'s in `tx`. The resource whose events keep their order is the
   * document for document events, else the dataset.
   */
  async record<K extends DomainEventName>(
    tx: Tx,
    accountId: string,
    name: K,
    data: DomainEventMap[K],
  ): Promise<void> {
    await this.recordMany(tx, accountId, name, [data]);
  }

  /** Records events of one kind of `accountId`'s in `tx`, in one statement, in the order given. */
  async recordMany<K extends DomainEventName>(
    tx: Tx,
    accountId: string,
    name: K,
    data: DomainEventMap[K][],
  ): Promise<void> {
    if (data.length === 0) return;
    await tx.query(
      `INSERT INTO events (id, account_id, event, resource_id, data)
       SELECT id, $1, $2, resource_id, data FROM unnest($3::text[], $4::text[], $5::jsonb[])
                AS e(id, resource_id, data)`,
      [
        accountId,
        name,
        data.map(() => newId('evt')),
        data.map((item) => ('document_id' in item ? item.document_id : item.dataset_id)),
        data.map((item) => JSON.stringify(item)),
      ],
    );
  }
}
