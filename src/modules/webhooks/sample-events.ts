import type { DomainEventMap } from 'src/modules/events/domain-events.js';
import type { WebhookEvent } from 'src/modules/webhooks/webhook-events.js';

const DATASET = 'ds_sample00000000000000000';
const DOCUMENT = 'doc_sample0000000000000000';

/** The `data` of each event as a test delivery sends it: every field, with made-up values. */
export const SAMPLE_EVENT_DATA: { [K in WebhookEvent]: DomainEventMap[K] } = {
  'document.uploaded': {
    document_id: DOCUMENT,
    dataset_id: DATASET,
    filename: 'manual.pdf',
    size_bytes: 24_607,
    status: 'processing',
    metadata: { category: 'guide' },
  },
  'document.processed': {
    document_id: DOCUMENT,
    dataset_id: DATASET,
    chunks_created: 12,
    processing_time_ms: 1_840,
    status: 'ready',
    embedding_model: 'Xenova/bge-small-en-v1.5',
  },
  'document.deleted': {
    document_id: DOCUMENT,
    dataset_id: DATASET,
    deleted_by: 'key_sample0000000000000000',
  },
  'document.updated': {
    document_id: DOCUMENT,
    dataset_id: DATASET,
    changes: { metadata: { category: 'guide', reviewed: true } },
    updated_by: 'key_sample0000000000000000',
  },
  'dataset.created': {
    dataset_id: DATASET,
    name: 'Product manuals',
    description: 'Manuals for every product we ship',
    is_public: false,
    created_by: 'key_sample0000000000000000',
  },
  'dataset.updated': {
    dataset_id: DATASET,
    changes: { description: 'Manuals and release notes' },
    updated_by: 'key_sample0000000000000000',
  },
  'dataset.deleted': { dataset_id: DATASET, document_count: 42, deleted_by: 'key_sample0000000000000000' },
  'document.processing_failed': {
    document_id: DOCUMENT,
    dataset_id: DATASET,
    error: { code: 'invalid_pdf', message: 'The PDF is encrypted', details: { reason: 'encrypted' } },
  },
};
