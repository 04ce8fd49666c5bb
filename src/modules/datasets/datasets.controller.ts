import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from 'src/common/http/api-errors.decorator.js';
import { Created } from 'src/common/http/created.decorator.js';
import { Idempotent } from 'src/common/idempotency/idempotent.decorator.js';
import { listEnvelope } from 'src/common/pagination/pagination.js';
import { Auth, CurrentAccount, CurrentPrincipal, PublicReadable } from 'src/modules/auth/auth.decorators.js';
import type { AccountPrincipal, Principal } from 'src/modules/auth/auth.types.js';
import type { DatasetEntity } from 'src/modules/datasets/dataset.entity.js';
import { DatasetsService } from 'src/modules/datasets/datasets.service.js';
import {
  CreateDatasetDto,
  DatasetListResponseDto,
  DatasetResponseDto,
  ListDatasetsQueryDto,
  toDatasetResponse,
  UpdateDatasetDto,
} from 'src/modules/datasets/dto/dataset.dto.js';

@ApiTags('datasets')
@Controller('v1/datasets')
export class DatasetsController {
  constructor(private readonly datasets: DatasetsService) {}

  @Post()
  @Created(DatasetResponseDto, '/v1/datasets/{id}')
  @Auth({ scope: 'datasets:write' })
  @Idempotent()
  @ApiOperation({ operationId: 'createDataset', summary: 'Create a dataset' })
  @ApiErrors([400, 401, 403, 409, 413, 415, 422, 429], {
    400: ['invalid_name', 'invalid_metadata', 'validation_error', 'invalid_idempotency_key'],
    409: ['dataset_name_conflict', 'idempotency_key_in_progress'],
    422: ['dataset_limit_reached', 'idempotency_key_reused'],
  })
  async create(
    @CurrentAccount() caller: AccountPrincipal,
    @Body() body: CreateDatasetDto,
  ): Promise<DatasetResponseDto> {
    return toDatasetResponse(await this.datasets.create(caller, body));
  }

  @Get()
  @Auth({ scope: 'datasets:read' })
  @ApiOperation({ operationId: 'listDatasets', summary: "List the account's datasets" })
  @ApiOkResponse({ type: DatasetListResponseDto })
  @ApiErrors([400, 401, 403, 429], { 400: ['validation_error'] })
  async list(
    @CurrentAccount() caller: AccountPrincipal,
    @Query() query: ListDatasetsQueryDto,
  ): Promise<DatasetListResponseDto> {
    const page = await this.datasets.list(caller, query);
    return listEnvelope(
      'datasets',
      { items: page.items.map((d) => toDatasetResponse(d)), total: page.total },
      query,
    );
  }

  @Get(':dataset_id')
  @PublicReadable({ scope: 'datasets:read' })
  @ApiOperation({
    operationId: 'getDataset',
    summary: 'Get a dataset',
    description: 'Public datasets can be read without authentication.',
  })
  @ApiOkResponse({ type: DatasetResponseDto })
  @ApiErrors([401, 403, 404, 429], { 404: ['dataset_not_found'] })
  async get(
    @CurrentPrincipal() caller: Principal,
    @Param('dataset_id') datasetId: string,
  ): Promise<DatasetResponseDto> {
    return this.shown(await this.datasets.get(caller, datasetId));
  }

  @Patch(':dataset_id')
  @Auth({ scope: 'datasets:write' })
  @ApiOperation({
    operationId: 'updateDataset',
    summary: 'Update a dataset',
    description: 'Only the fields sent change; metadata is merged key by key.',
  })
  @ApiOkResponse({ type: DatasetResponseDto })
  @ApiErrors([400, 401, 403, 404, 409, 413, 415, 429], {
    400: ['invalid_name', 'invalid_metadata', 'validation_error'],
    404: ['dataset_not_found'],
    409: ['dataset_name_conflict'],
  })
  async update(
    @CurrentAccount() caller: AccountPrincipal,
    @Param('dataset_id') datasetId: string,
    @Body() body: UpdateDatasetDto,
  ): Promise<DatasetResponseDto> {
    return this.shown(await this.datasets.update(caller, datasetId, body));
  }

  /** The dataset as a single dataset's answers show it: with its fusion weights (a list leaves them out). */
  private async shown(dataset: DatasetEntity): Promise<DatasetResponseDto> {
    const fusion = await this.datasets.fusionOf([dataset]);
    return toDatasetResponse(dataset, fusion.get(dataset.id) ?? null);
  }

  @Delete(':dataset_id')
  @HttpCode(204)
  @Auth({ scope: 'datasets:write' })
  @ApiOperation({
    operationId: 'deleteDataset',
    summary: 'Delete a dataset with all its documents, chunks and embeddings',
  })
  @ApiNoContentResponse({ description: 'Deleted' })
  @ApiErrors([401, 403, 404, 429], { 404: ['dataset_not_found'] })
  async delete(
    @CurrentAccount() caller: AccountPrincipal,
    @Param('dataset_id') datasetId: string,
  ): Promise<void> {
    await this.datasets.delete(caller, datasetId);
  }
}
