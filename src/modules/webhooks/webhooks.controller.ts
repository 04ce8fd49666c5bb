import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiExtraModels,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { ApiErrors, type ErrorCodesByStatus } from 'src/common/http/api-errors.decorator.js';
import { Created } from 'src/common/http/created.decorator.js';
import { Idempotent } from 'src/common/idempotency/idempotent.decorator.js';
import { listEnvelope } from 'src/common/pagination/pagination.js';
import { Auth, CurrentAccount } from 'src/modules/auth/auth.decorators.js';
import type { AccountPrincipal } from 'src/modules/auth/auth.types.js';
import type { DeliveryLogEntry } from 'src/modules/webhooks/delivery-log.repository.js';
import { DeliveryLogService } from 'src/modules/webhooks/delivery-log.service.js';
import {
  CreateWebhookDto,
  DeliveryListResponseDto,
  DeliveryResponseDto,
  ListDeliveriesQueryDto,
  ListWebhooksQueryDto,
  RotateWebhookSecretDto,
  TestDeliveryResponseDto,
  TestWebhookDto,
  UpdateWebhookDto,
  WebhookEventPayloadDto,
  WebhookListResponseDto,
  WebhookResponseDto,
} from 'src/modules/webhooks/dto/webhook.dto.js';
import type { WebhookEvent } from 'src/modules/webhooks/webhook-events.js';
import type { WebhookEntity } from 'src/modules/webhooks/webhook.entity.js';
import { TestDeliveryService } from 'src/modules/webhooks/test-delivery.service.js';
import { WEBHOOK_CREATED_REPLAY, WebhooksService } from 'src/modules/webhooks/webhooks.service.js';

/** A webhook as the API shows it; its secret only where it was just made (`withSecret`). */
export function toWebhookResponse(webhook: WebhookEntity, withSecret = false): WebhookResponseDto {
  return {
    webhook_id: webhook.id,
    url: webhook.url,
    events: webhook.events,
    description: webhook.description,
    active: webhook.active,
    disabled_reason: webhook.disabledReason,
    created_at: webhook.createdAt.toISOString(),
    updated_at: webhook.updatedAt.toISOString(),
    ...(withSecret ? { secret: webhook.secret } : {}),
    ...(webhook.previousSecretExpiresAt && webhook.previousSecretExpiresAt > new Date()
      ? { previous_secret_expires_at: webhook.previousSecretExpiresAt.toISOString() }
      : {}),
  };
}

function toDeliveryResponse(delivery: DeliveryLogEntry): DeliveryResponseDto {
  return {
    delivery_id: delivery.id,
    event_id: delivery.eventId,
    event: delivery.event,
    status: delivery.status,
    ...(delivery.status === 'pending'
      ? { next_attempt_at: new Date(delivery.nextAttemptAt).toISOString() }
      : {}),
    created_at: new Date(delivery.createdAt).toISOString(),
    completed_at: delivery.completedAt ? new Date(delivery.completedAt).toISOString() : null,
    attempts: delivery.attempts.map((attempt) => ({
      attempt_id: attempt.id,
      attempt: attempt.attempt,
      outcome: attempt.outcome,
      status_code: attempt.statusCode,
      duration_ms: attempt.durationMs,
      error: attempt.error,
      response_body: attempt.responseBody,
      started_at: new Date(attempt.startedAt).toISOString(),
    })),
  };
}

const WRITE_ERRORS = {
  400: ['validation_error', 'invalid_events', 'invalid_webhook_url'],
} satisfies ErrorCodesByStatus;

@ApiTags('webhooks')
// What every delivery POSTs: in the document for receivers, though no route returns it.
@ApiExtraModels(WebhookEventPayloadDto)
@Controller('v1/webhooks')
export class WebhooksController {
  constructor(
    private readonly webhooks: WebhooksService,
    private readonly deliveryLog: DeliveryLogService,
    private readonly testDeliveries: TestDeliveryService,
  ) {}

  @Post('test')
  @HttpCode(200)
  @Auth({ scope: 'webhooks:write' })
  @ApiOperation({
    operationId: 'testWebhook',
    summary: 'Send a test delivery',
    description:
      'Sends the event with sample data to the webhook now, signed like any delivery, and answers how the ' +
      'attempt went. Not retried, not in the delivery log, and not counted towards automatic disabling.',
  })
  @ApiOkResponse({ type: TestDeliveryResponseDto })
  @ApiErrors([400, 401, 403, 404, 413, 415, 429], { 400: ['validation_error'], 404: ['webhook_not_found'] })
  async test(
    @CurrentAccount() caller: AccountPrincipal,
    @Body() body: TestWebhookDto,
  ): Promise<TestDeliveryResponseDto> {
    const { event, delivered, result } = await this.testDeliveries.test(
      caller,
      body.webhook_id,
      body.event as WebhookEvent,
    );
    return {
      webhook_id: body.webhook_id,
      event,
      delivered,
      status_code: result.statusCode,
      duration_ms: result.durationMs,
      error: result.error,
      response_body: result.responseBody,
    };
  }

  @Post()
  @Created(WebhookResponseDto, '/v1/webhooks/{webhook_id}')
  @Auth({ scope: 'webhooks:write' })
  @Idempotent({ replay: WEBHOOK_CREATED_REPLAY })
  @ApiOperation({
    operationId: 'createWebhook',
    summary: 'Subscribe a URL to events',
    description:
      'The response holds the signing secret, shown in full only here and at rotation. Deliveries POST a ' +
      'WebhookEventPayloadDto, signed with X-SERVICE-Signature and the Standard Webhooks headers (docs/webhooks.md).',
  })
  @ApiErrors([400, 401, 403, 409, 413, 415, 422, 429], {
    400: [...WRITE_ERRORS[400], 'invalid_idempotency_key'],
    409: ['idempotency_key_in_progress'],
    422: ['webhook_limit_reached', 'idempotency_key_reused'],
  })
  async create(
    @CurrentAccount() caller: AccountPrincipal,
    @Body() body: CreateWebhookDto,
  ): Promise<WebhookResponseDto> {
    return toWebhookResponse(await this.webhooks.create(caller, body), true);
  }

  @Get()
  @Auth({ scope: 'webhooks:read' })
  @ApiOperation({ operationId: 'listWebhooks', summary: "List the account's webhooks, newest first" })
  @ApiOkResponse({ type: WebhookListResponseDto })
  @ApiErrors([400, 401, 403, 429], { 400: ['validation_error'] })
  async list(
    @CurrentAccount() caller: AccountPrincipal,
    @Query() query: ListWebhooksQueryDto,
  ): Promise<WebhookListResponseDto> {
    const page = await this.webhooks.list(caller, query.limit, query.offset);
    const items = page.items.map((webhook) => toWebhookResponse(webhook));
    return listEnvelope('webhooks', { items, total: page.total }, query);
  }

  @Get(':webhook_id')
  @Auth({ scope: 'webhooks:read' })
  @ApiOperation({ operationId: 'getWebhook', summary: 'Get a webhook' })
  @ApiOkResponse({ type: WebhookResponseDto })
  @ApiErrors([401, 403, 404, 429], { 404: ['webhook_not_found'] })
  async get(
    @CurrentAccount() caller: AccountPrincipal,
    @Param('webhook_id') webhookId: string,
  ): Promise<WebhookResponseDto> {
    return toWebhookResponse(await this.webhooks.get(caller, webhookId));
  }

  @Patch(':webhook_id')
  @Auth({ scope: 'webhooks:write' })
  @ApiOperation({
    operationId: 'updateWebhook',
    summary: 'Update a webhook',
    description: 'Only the fields sent change. `active: true` re-enables a webhook the service disabled.',
  })
  @ApiOkResponse({ type: WebhookResponseDto })
  @ApiErrors([400, 401, 403, 404, 413, 415, 429], { ...WRITE_ERRORS, 404: ['webhook_not_found'] })
  async update(
    @CurrentAccount() caller: AccountPrincipal,
    @Param('webhook_id') webhookId: string,
    @Body() body: UpdateWebhookDto,
  ): Promise<WebhookResponseDto> {
    return toWebhookResponse(await this.webhooks.update(caller, webhookId, body));
  }

  @Delete(':webhook_id')
  @HttpCode(204)
  @Auth({ scope: 'webhooks:write' })
  @ApiOperation({
    operationId: 'deleteWebhook',
    summary: 'Delete a webhook with its delivery log; nothing more is sent to it',
  })
  @ApiNoContentResponse({ description: 'Deleted' })
  @ApiErrors([401, 403, 404, 429], { 404: ['webhook_not_found'] })
  async delete(
    @CurrentAccount() caller: AccountPrincipal,
    @Param('webhook_id') webhookId: string,
  ): Promise<void> {
    await this.webhooks.delete(caller, webhookId);
  }

  @Post(':webhook_id/rotate-secret')
  @HttpCode(200)
  @Auth({ scope: 'webhooks:write' })
  @ApiOperation({
    operationId: 'rotateWebhookSecret',
    summary: 'Replace the signing secret',
    description:
      'The response holds the new secret. The previous one keeps signing beside it (a second signature in ' +
      'webhook-signature) until previous_secret_expires_at: `grace_hours` from now (WEBHOOK_SECRET_GRACE_HOURS, 24 ' +
      'by default). A secret that leaked is cut off at once with `{"grace_hours": 0}`.',
  })
  @ApiOkResponse({ type: WebhookResponseDto })
  @ApiErrors([400, 401, 403, 404, 429], { 400: ['validation_error'], 404: ['webhook_not_found'] })
  async rotateSecret(
    @CurrentAccount() caller: AccountPrincipal,
    @Param('webhook_id') webhookId: string,
    @Body() body: RotateWebhookSecretDto,
  ): Promise<WebhookResponseDto> {
    return toWebhookResponse(await this.webhooks.rotateSecret(caller, webhookId, body.grace_hours), true);
  }

  @Get(':webhook_id/deliveries')
  @Auth({ scope: 'webhooks:read' })
  @ApiOperation({
    operationId: 'listWebhookDeliveries',
    summary: "A webhook's delivery log, newest first",
    description:
      'Each delivery of an event with each of its attempts; kept WEBHOOK_RETENTION_DAYS (30) days.',
  })
  @ApiOkResponse({ type: DeliveryListResponseDto })
  @ApiErrors([400, 401, 403, 404, 429], { 400: ['validation_error'], 404: ['webhook_not_found'] })
  async listDeliveries(
    @CurrentAccount() caller: AccountPrincipal,
    @Param('webhook_id') webhookId: string,
    @Query() query: ListDeliveriesQueryDto,
  ): Promise<DeliveryListResponseDto> {
    const page = await this.deliveryLog.list(caller, webhookId, query);
    return listEnvelope(
      'deliveries',
      { items: page.items.map(toDeliveryResponse), total: page.total },
      query,
    );
  }

  @Post(':webhook_id/deliveries/:delivery_id/redeliver')
  @HttpCode(202)
  @Auth({ scope: 'webhooks:write' })
  @ApiOperation({
    operationId: 'redeliverWebhookDelivery',
    summary: 'Send a delivery’s event again',
    description:
      'A new delivery of the same event (same body and id), queued now; its outcome shows in the log.',
  })
  @ApiAcceptedResponse({ type: DeliveryResponseDto })
  @ApiErrors([401, 403, 404, 429], { 404: ['webhook_not_found', 'delivery_not_found'] })
  async redeliver(
    @CurrentAccount() caller: AccountPrincipal,
    @Param('webhook_id') webhookId: string,
    @Param('delivery_id') deliveryId: string,
  ): Promise<DeliveryResponseDto> {
    return toDeliveryResponse(await this.deliveryLog.redeliver(caller, webhookId, deliveryId));
  }
}
