import { Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { ApiErrors } from 'src/common/http/api-errors.decorator.js';
import { Auth, CurrentAccount, CurrentPrincipal, PublicReadable } from 'src/modules/auth/auth.decorators.js';
import type { AccountPrincipal, Principal } from 'src/modules/auth/auth.types.js';
import { DatasetsService } from 'src/modules/datasets/datasets.service.js';
import { ReembeddingResponseDto } from 'src/modules/embeddings/dto/reembedding.dto.js';
import { ReembedService } from 'src/modules/embeddings/reembed.service.js';

/**
 * A dataset's move to the service's embedding model, over the API (docs/ingestion.md, Changing a
 * dataset's model): asked for here, built by a worker of that model, watched here.
 */
@ApiTags('datasets')
@Controller('v1/datasets/:dataset_id/reembedding')
export class ReembeddingController {
  constructor(
    private readonly datasets: DatasetsService,
    private readonly reembed: ReembedService,
  ) {}

  @Post()
  @HttpCode(202)
  @Auth({ scope: 'datasets:write' })
  @ApiOperation({
    operationId: 'reembedDataset',
    summary: 'Re-embed a dataset with the service’s model',
    description:
      'Builds vectors of the service’s embedding model beside the dataset’s own; searches use the old ones ' +
      'until every chunk has a new one, then switch at once. Asking again for the same model answers the ' +
      're-embedding under way.',
  })
  @ApiAcceptedResponse({ type: ReembeddingResponseDto })
  @ApiErrors([400, 401, 403, 404, 409, 429], {
    400: ['semantic_unavailable'],
    404: ['dataset_not_found'],
    409: ['reembed_in_progress'],
  })
  async start(
    @CurrentAccount() caller: AccountPrincipal,
    @Param('dataset_id') datasetId: string,
  ): Promise<ReembeddingResponseDto> {
    const dataset = await this.datasets.getOwned(caller, datasetId);
    return this.reembed.request(dataset.id);
  }

  @Get()
  @PublicReadable({ scope: 'datasets:read' })
  @ApiOperation({ operationId: 'getReembedding', summary: 'How far a dataset’s re-embedding has come' })
  @ApiOkResponse({ type: ReembeddingResponseDto })
  @ApiErrors([401, 403, 404, 429], { 404: ['dataset_not_found'] })
  async get(
    @CurrentPrincipal() caller: Principal,
    @Param('dataset_id') datasetId: string,
  ): Promise<ReembeddingResponseDto> {
    const dataset = await this.datasets.get(caller, datasetId);
    return this.reembed.status(dataset.id);
  }

  @Delete()
  @HttpCode(204)
  @Auth({ scope: 'datasets:write' })
  @ApiOperation({
    operationId: 'cancelReembedding',
    summary: 'Cancel a dataset’s re-embedding',
    description:
      'The vectors built so far are dropped; the dataset keeps its model. Nothing to cancel is not an error.',
  })
  @ApiNoContentResponse({ description: 'Cancelled, or nothing was under way' })
  @ApiErrors([401, 403, 404, 429], { 404: ['dataset_not_found'] })
  async cancel(
    @CurrentAccount() caller: AccountPrincipal,
    @Param('dataset_id') datasetId: string,
  ): Promise<void> {
    const dataset = await this.datasets.getOwned(caller, datasetId);
    await this.reembed.cancel(dataset.id);
  }
}
