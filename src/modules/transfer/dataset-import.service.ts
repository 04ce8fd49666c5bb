import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from 'pino';
import type { StreamedBody } from 'src/common/http/streamed-body.js';
import { LOGGER } from 'src/common/logging/logger.js';
import { AppValidationPipe } from 'src/common/validation/validation.pipe.js';
import { AppError } from 'src/common/errors/app-error.js';
import { TransactionRunner, type Tx } from 'src/database/transaction.js';
import type { AccountPrincipal } from 'src/modules/auth/auth.types.js';
import { ChunkIndexRepository } from 'src/modules/chunk-index/chunk-index.repository.js';
import { FusionChoiceRepository } from 'src/modules/chunk-index/fusion-choice.repository.js';
import type { DatasetEntity } from 'src/modules/datasets/dataset.entity.js';
import { DatasetErrors } from 'src/modules/datasets/datasets.errors.js';
import { DatasetsRepository } from 'src/modules/datasets/datasets.repository.js';
import { DatasetsService } from 'src/modules/datasets/datasets.service.js';
import { CreateDatasetDto } from 'src/modules/datasets/dto/dataset.dto.js';
import { DOCUMENT_LIMITS } from 'src/modules/documents/documents.errors.js';
import { DocumentsRepository } from 'src/modules/documents/documents.repository.js';
import { DocumentsService } from 'src/modules/documents/documents.service.js';
import { EmbeddingService } from 'src/modules/embeddings/embedding.service.js';
import { ReembedService } from 'src/modules/embeddings/reembed.service.js';
import { IngestionQueue } from 'src/modules/ingestion-queue/ingestion.queue.js';
import type {
  DatasetRecord,
  EmbeddingModelRecord,
  ManifestRecord,
} from 'src/modules/transfer/archive-format.js';
import { archiveRecords, type NumberedRecord } from 'src/modules/transfer/archive-reader.js';
import { ImportWriter, type ImportTotals } from 'src/modules/transfer/import-writer.js';
import { spool } from 'src/modules/transfer/spooled-body.js';
import { TransferErrors } from 'src/modules/transfer/transfer.errors.js';

const validation = new AppValidationPipe();

/** The largest archive taken, compressed: every document at the file limit would not fit, by far. */
export const IMPORT_MAX_BYTES = 8 * 1024 * 1024 * 1024;

/** What became of the archive's vectors (docs/export-format.md, Import). */
export type VectorOutcome = 'restored' | 'embedding' | 'keyword_only';

export interface ImportResult extends ImportTotals {
  dataset: DatasetEntity;
  sourceDatasetId: string;
  vectors: VectorOutcome;
}

/**
 * `POST /v1/datasets/import`: an archive, spooled to a temporary file as it arrives, then read a record
 * at a time into a new dataset of the caller's account, in one transaction, so that a refusal anywhere
 * in it leaves nothing. Chunks are indexed through the index's own writes (`ChunkIndexRepository.appendChunks`),
 * so postings and statistics are what indexing makes; their vectors are kept when they are of the
 * service's model, and otherwise dropped and built again in the background (a re-embedding request).
 */
@Injectable()
export class DatasetImportService {
  constructor(
    private readonly uploads: DocumentsService,
    private readonly documents: DocumentsRepository,
    private readonly datasets: DatasetsRepository,
    private readonly datasetsService: DatasetsService,
    private readonly fusion: FusionChoiceRepository,
    private readonly chunkIndex: ChunkIndexRepository,
    private readonly embedding: EmbeddingService,
    private readonly reembed: ReembedService,
    private readonly queue: IngestionQueue,
    private readonly transactions: TransactionRunner,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async import(caller: AccountPrincipal, body: StreamedBody, name?: string): Promise<ImportResult> {
    // A grant for chosen datasets does not reach datasets created after it.
    if (caller.datasetIds !== null) throw DatasetErrors.grantRestricted();
    const spooled = await spool(body, IMPORT_MAX_BYTES);
    const records = archiveRecords(spooled.read())[Symbol.asyncIterator]();
    try {
      const manifest = await expect(records, 'manifest', 1);
      const datasetRecord = await expect(records, 'dataset', 2);
      const input = await datasetInput(datasetRecord, name);
      if (manifest.counts.documents > DOCUMENT_LIMITS.perDataset) {
        throw TransferErrors.overLimits(
          'documents_per_dataset',
          `a dataset holds at most ${DOCUMENT_LIMITS.perDataset} documents; this archive has ${manifest.counts.documents}`,
          { record: 1 },
        );
      }
      const provider = this.embedding.current();
      const keepVectors = sameModel(manifest.embedding, provider);
      const outcome = await this.transactions.run(async (tx) => {
        const dataset = await this.createDataset(tx, caller, input, datasetRecord, manifest);
        const writer = new ImportWriter(tx, dataset, manifest, keepVectors, {
          uploads: this.uploads,
          documents: this.documents,
          chunkIndex: this.chunkIndex,
        });
        const totals = await writer.writeAll(records);
        await this.datasets.adjustDocumentCount(tx, dataset.id, totals.documents);
        return { dataset: { ...dataset, documentCount: totals.documents }, totals, queued: writer.queued };
      });
      await this.queue.enqueueMany(outcome.queued);
      const vectors = await this.embedInBackground(outcome.dataset.id, outcome.totals, keepVectors);
      return {
        ...outcome.totals,
        dataset: outcome.dataset,
        sourceDatasetId: manifest.source.dataset_id,
        vectors,
      };
    } finally {
      await records.return?.(undefined);
      await spooled.remove();
    }
  }

  private async createDataset(
    tx: Tx,
    caller: AccountPrincipal,
    input: CreateDatasetDto,
    record: DatasetRecord,
    manifest: ManifestRecord,
  ): Promise<DatasetEntity> {
    const dataset = await this.datasetsService.createIn(tx, caller, input);
    // The weights were chosen at the archive's model; the tuning chooses again at another.
    if (record.fusion && manifest.embedding) {
      await this.fusion.save(
        dataset.seq,
        {
          keywordWeight: record.fusion.keyword_weight,
          semanticWeight: record.fusion.semantic_weight,
          embeddingModel: record.fusion.embedding_model,
          chunkCount: record.fusion.chunk_count,
          pseudoQueries: record.fusion.pseudo_queries,
          evidence: record.fusion.evidence,
        },
        tx,
      );
    }
    // Nobody else sees the dataset before the commit; the lock keeps the index's writers' rule all the same.
    await this.chunkIndex.lockDataset(tx, dataset.id);
    return dataset;
  }

  /**
   * Chunks imported without a vector (another model's, or none) get the service's model's through a
   * re-embedding request, which a worker of that model builds (ReembeddingWorker); with no model here,
   * they stay keyword-only until one comes (the catch-up).
   */
  private async embedInBackground(
    datasetId: string,
    totals: ImportTotals,
    keptVectors: boolean,
  ): Promise<VectorOutcome> {
    if (totals.chunks === 0 || (keptVectors && totals.chunksWithoutVector === 0)) {
      return keptVectors ? 'restored' : 'keyword_only';
    }
    if (!this.embedding.current()) return 'keyword_only';
    try {
      await this.reembed.request(datasetId);
      return 'embedding';
    } catch (err) {
      this.logger.warn(
        { err, dataset_id: datasetId },
        'could not request the embedding of an imported dataset; the catch-up will embed it',
      );
      return 'keyword_only';
    }
  }
}

/** The next record, which must be of `type`: the archive's head is the manifest, then the dataset. */
async function expect<T extends 'manifest' | 'dataset'>(
  records: AsyncIterator<NumberedRecord>,
  type: T,
  line: number,
): Promise<Extract<NumberedRecord['record'], { type: T }>> {
  const next = await records.next();
  if (next.done) {
    if (line === 1) throw TransferErrors.corrupt('the archive is empty');
    throw TransferErrors.truncated(`no ${type} record`, { record: line });
  }
  const { record } = next.value;
  if (record.type !== type) {
    throw TransferErrors.corrupt(`record ${next.value.line} must be the ${type}, not a ${record.type}`, {
      record: next.value.line,
    });
  }
  return record as Extract<NumberedRecord['record'], { type: T }>;
}

/** The dataset's settings checked as a creation's are; `name` given with the request wins. */
async function datasetInput(record: DatasetRecord, name: string | undefined): Promise<CreateDatasetDto> {
  const body = {
    name: name ?? record.name,
    ...(record.description === null ? {} : { description: record.description }),
    is_public: record.is_public,
    metadata: record.metadata,
    language: record.language,
  };
  try {
    return (await validation.transform(body, {
      type: 'body',
      metatype: CreateDatasetDto,
    })) as CreateDatasetDto;
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    throw TransferErrors.overLimits(error.code, error.message, { record: 2, cause: error.details ?? null });
  }
}

function sameModel(
  archived: EmbeddingModelRecord | null,
  provider: { model: string; dimensions: number } | null,
) {
  return (
    archived !== null &&
    provider !== null &&
    archived.model === provider.model &&
    archived.dimensions === provider.dimensions
  );
}
