import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Tx } from 'src/database/transaction.js';

/** How each leg and each weight did on a dataset's pseudo-queries: nDCG@10 (docs/search.md). */
export interface FusionEvidence {
  keyword: number;
  semantic: number;
  /** Hybrid's figure at each semantic weight tried, by the weight written with one decimal. */
  hybrid: Record<string, number>;
}

/** The weights a dataset's hybrid searches use, as chosen from its own documents, and on what evidence. */
export interface FusionChoice {
  keywordWeight: number;
  semanticWeight: number;
  chosenAt: Date;
  /** The model and the size of the index the choice was made at. */
  embeddingModel: string;
  chunkCount: number;
  pseudoQueries: number;
  evidence: FusionEvidence;
}

/** A dataset whose choice is due: its index holds enough chunks, and none was made at its size and model. */
export interface FusionDue {
  datasetId: string;
  datasetSeq: string;
  /** The text search configuration of its keyword leg. */
  language: string;
  chunkCount: number;
  embeddingModel: string;
}

const COLUMNS = `keyword_weight AS "keywordWeight", semantic_weight AS "semanticWeight", chosen_at AS "chosenAt",
  embedding_model AS "embeddingModel", chunk_count::float8 AS "chunkCount", pseudo_queries AS "pseudoQueries",
  evidence`;

/** Each dataset's fusion weights (`dataset_fusion`), written by the search module's tuning and read with the index. */
@Injectable()
export class FusionChoiceRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The choices of the datasets `seqs`, by seq. */
  async ofDatasets(seqs: string[]): Promise<Map<string, FusionChoice>> {
    if (seqs.length === 0) return new Map();
    const rows = await this.db.query<(FusionChoice & { seq: string })[]>(
      `SELECT dataset_seq::text AS seq, ${COLUMNS} FROM dataset_fusion WHERE dataset_seq = ANY($1::bigint[])`,
      [seqs],
    );
    return new Map(rows.map(({ seq, ...choice }) => [seq, choice]));
  }

  /**
   * Datasets due a choice (or `datasetId` alone, when due): vectors of one model, at least `minChunks`
   * chunks, no document processing, and no choice made at that model, or one made when the index was
   * smaller or larger than now by more than `changeShare` of its size then.
   */
  async due(minChunks: number, changeShare: number, datasetId?: string): Promise<FusionDue[]> {
    return this.db.query<FusionDue[]>(
      `SELECT i.dataset_id AS "datasetId", i.dataset_seq::text AS "datasetSeq", d.language,
              i.chunk_count::float8 AS "chunkCount", i.embedding_model AS "embeddingModel"
         FROM dataset_index i
         JOIN datasets d ON d.seq = i.dataset_seq
         LEFT JOIN dataset_fusion f ON f.dataset_seq = i.dataset_seq
        WHERE i.chunk_count >= $1 AND i.embedding_model IS NOT NULL
          -- Being re-embedded: chosen again at the new model, once it is the dataset's.
          AND i.next_embedding_model IS NULL
          AND ($3::text IS NULL OR i.dataset_id = $3)
          -- A dataset being loaded is judged once it is quiet, not at every step of its growth.
          AND NOT EXISTS (SELECT FROM documents p WHERE p.dataset_seq = i.dataset_seq AND p.status = 'processing')
          AND (f.dataset_seq IS NULL OR f.embedding_model <> i.embedding_model
               OR abs(i.chunk_count - f.chunk_count) > $2::float8 * f.chunk_count)
        ORDER BY i.dataset_seq`,
      [minChunks, changeShare, datasetId ?? null],
    );
  }

  /**
   * Records a choice, replacing the dataset's last one; nothing when the dataset is gone meanwhile. In
   * `tx` when given (an imported dataset's choice, written with it).
   * (`EXCLUDED.chosen_at` is the default now(): Citus refuses a function in a DO UPDATE.)
   */
  async save(datasetSeq: string, choice: Omit<FusionChoice, 'chosenAt'>, tx?: Tx): Promise<void> {
    await (tx ?? this.db).query(
      `INSERT INTO dataset_fusion (dataset_seq, keyword_weight, semantic_weight, embedding_model, chunk_count,
                                   pseudo_queries, evidence)
       SELECT seq, $2, $3, $4, $5, $6, $7 FROM datasets WHERE seq = $1
       ON CONFLICT (dataset_seq) DO UPDATE
          SET keyword_weight = EXCLUDED.keyword_weight, semantic_weight = EXCLUDED.semantic_weight,
              chosen_at = EXCLUDED.chosen_at, embedding_model = EXCLUDED.embedding_model,
              chunk_count = EXCLUDED.chunk_count, pseudo_queries = EXCLUDED.pseudo_queries,
              evidence = EXCLUDED.evidence`,
      [
        datasetSeq,
        choice.keywordWeight,
        choice.semanticWeight,
        choice.embeddingModel,
        choice.chunkCount,
        choice.pseudoQueries,
        JSON.stringify(choice.evidence),
      ],
    );
  }
}
