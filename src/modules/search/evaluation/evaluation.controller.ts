import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiTags, type ExampleObject } from '@nestjs/swagger';
import { ApiErrors } from 'src/common/http/api-errors.decorator.js';
import { CurrentPrincipal, PublicReadable } from 'src/modules/auth/auth.decorators.js';
import type { Principal } from 'src/modules/auth/auth.types.js';
import {
  EVALUATION_LIMITS,
  EvaluationRequestDto,
  EvaluationResponseDto,
} from 'src/modules/search/dto/evaluation.dto.js';
import { EvaluationService } from 'src/modules/search/evaluation/evaluation.service.js';

/**
 * The bodies Swagger UI offers, the first by default: it runs as it stands on a dataset holding
 * `createDocument`'s example (its metadata has `category: guide`).
 */
const EXAMPLES: Record<string, ExampleObject> = {
  plain: {
    summary: 'A judged query, its relevant documents named by metadata',
    value: {
      queries: [{ query: 'how do I install on linux?', relevant: [{ metadata: { category: 'guide' } }] }],
    },
  },
  graded: {
    summary: 'Graded judgements by document id, more weights, and each query’s figures',
    description: 'Replace REPLACE_WITH_A_DOCUMENT_ID with a `document_id` of the dataset.',
    value: {
      queries: [
        {
          query: 'how do I install on linux?',
          relevant: [
            { document_id: 'REPLACE_WITH_A_DOCUMENT_ID', grade: 2 },
            { metadata: { category: 'guide' } },
          ],
        },
      ],
      weights: [{ keyword: 0.8, semantic: 0.2 }],
      per_query: true,
    },
  },
};

@ApiTags('search')
@Controller('v1/datasets/:dataset_id/evaluations')
export class EvaluationController {
  constructor(private readonly evaluation: EvaluationService) {}

  @Post()
  @HttpCode(200)
  @PublicReadable({ scope: 'search' })
  @ApiOperation({
    operationId: 'evaluateSearch',
    summary: 'Measure retrieval on judged queries',
    description:
      `Send up to ${EVALUATION_LIMITS.queries} queries, each with the documents relevant to it (by \`document_id\`, ` +
      'or by metadata values), and get nDCG@10, Recall@100 and MRR@10 of keyword, semantic and hybrid search over ' +
      "the dataset's index as it stands: hybrid at the weights its searches use, at a fixed grid and at `weights`. " +
      'Each ranking is the one a search of the dataset answers. Larger sets go in pages with `per_query`, whose ' +
      'figures average exactly. Nothing is stored. Whoever may search the dataset may evaluate it.',
  })
  @ApiBody({ type: EvaluationRequestDto, examples: EXAMPLES })
  @ApiOkResponse({ type: EvaluationResponseDto })
  @ApiErrors([400, 401, 403, 404, 413, 415, 429, 503, 504], {
    400: ['validation_error', 'too_many_queries', 'query_too_long', 'invalid_filter', 'too_many_filters'],
    404: ['dataset_not_found'],
    503: ['embedding_unavailable'],
    504: ['query_timeout'],
  })
  evaluate(
    @CurrentPrincipal() caller: Principal,
    @Param('dataset_id') datasetId: string,
    @Body() body: EvaluationRequestDto,
  ): Promise<EvaluationResponseDto> {
    return this.evaluation.evaluate(caller, datasetId, body);
  }
}
