import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  IsArray,
  IsBoolean,
  IsDefined,
  IsIn,
  IsInt,
  IsString,
  Max,
  MaxLength,
  Min,
  ValidateIf,
} from 'class-validator';
import { PageEnvelopeDto, PageQueryDto } from 'src/common/pagination/pagination.js';
import { WEBHOOK_EVENTS } from 'src/modules/webhooks/webhook-events.js';
import { WEBHOOK_LIMITS } from 'src/modules/webhooks/webhooks.errors.js';

const URL_DOC = {
  description: 'Where deliveries are POSTed: https://, or http:// to localhost outside production',
  maxLength: WEBHOOK_LIMITS.urlCharacters,
  example: 'https://hooks.example.com/search-events',
};
const EVENTS_DOC = {
  isArray: true,
  enum: [...WEBHOOK_EVENTS],
  enumName: 'WebhookEvent',
  minItems: 1,
  description: 'The events to receive: a non-empty subset of the eight',
  example: ['document.processed', 'document.processing_failed'],
};
const DESCRIPTION_DOC = {
  maxLength: WEBHOOK_LIMITS.descriptionCharacters,
  nullable: true,
  type: String,
  example: 'Reindex the help centre when manuals change',
};

export class CreateWebhookDto {
  @ApiProperty(URL_DOC)
  @IsString({ message: 'must be a string' })
  @IsDefined({ message: 'is required' })
  url!: string;

  @ApiProperty(EVENTS_DOC)
  // Names are checked by the service, which answers invalid_events naming the unknown ones.
  @IsString({ each: true, message: 'must be strings' })
  @IsArray({ message: 'must be an array of event names' })
  @IsDefined({ message: 'is required' })
  events!: string[];

  @ApiPropertyOptional(DESCRIPTION_DOC)
  @ValidateIf((_, value) => value !== undefined && value !== null)
  @MaxLength(WEBHOOK_LIMITS.descriptionCharacters, {
    message: `must be at most ${WEBHOOK_LIMITS.descriptionCharacters} characters`,
  })
  @IsString({ message: 'must be a string' })
  description?: string | null;

  @ApiPropertyOptional({ default: true, description: 'An inactive webhook receives nothing' })
  @ValidateIf((_, value) => value !== undefined)
  @IsBoolean({ message: 'must be a boolean' })
  active?: boolean;
}

export class UpdateWebhookDto {
  @ApiPropertyOptional(URL_DOC)
  @ValidateIf((_, value) => value !== undefined)
  @IsString({ message: 'must be a string' })
  url?: string;

  @ApiPropertyOptional(EVENTS_DOC)
  @ValidateIf((_, value) => value !== undefined)
  @IsString({ each: true, message: 'must be strings' })
  @IsArray({ message: 'must be an array of event names' })
  events?: string[];

  @ApiPropertyOptional(DESCRIPTION_DOC)
  @ValidateIf((_, value) => value !== undefined && value !== null)
  @MaxLength(WEBHOOK_LIMITS.descriptionCharacters, {
    message: `must be at most ${WEBHOOK_LIMITS.descriptionCharacters} characters`,
  })
  @IsString({ message: 'must be a string' })
  description?: string | null;

  @ApiPropertyOptional({
    description: 'true re-enables a webhook, also one the service disabled for failing deliveries',
  })
  @ValidateIf((_, value) => value !== undefined)
  @IsBoolean({ message: 'must be a boolean' })
  active?: boolean;
}

export class ListWebhooksQueryDto extends PageQueryDto {}

export class WebhookResponseDto {
  @ApiProperty({ example: 'wh_3kT9qLm2Vx8ZpR4sNc7bYw' })
  webhook_id!: string;

  @ApiProperty({ example: 'https://hooks.example.com/search-events' })
  url!: string;

  @ApiProperty({
    isArray: true,
    enum: [...WEBHOOK_EVENTS],
    enumName: 'WebhookEvent',
    example: ['document.processed'],
  })
  events!: string[];

  @ApiProperty({ nullable: true, type: String, example: 'Reindex the help centre' })
  description!: string | null;

  @ApiProperty({ example: true })
  active!: boolean;

  @ApiProperty({
    nullable: true,
    type: String,
    description: 'Why the service disabled it (failing deliveries); null otherwise',
    example: null,
  })
  disabled_reason!: string | null;

  @ApiProperty({ format: 'date-time' })
  created_at!: string;

  @ApiProperty({ format: 'date-time' })
  updated_at!: string;

  @ApiPropertyOptional({
    description:
      'The signing secret, shown only when the webhook is created and when its secret is rotated. Verify ' +
      'X-SERVICE-Signature (hex HMAC-SHA256 of the raw body, keyed with this string) or webhook-signature ' +
      '(Standard Webhooks); docs/webhooks.md',
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  })
  secret?: string;

  @ApiPropertyOptional({
    format: 'date-time',
    nullable: true,
    type: String,
    description: 'After a rotation: until when the previous secret still signs beside the new one',
  })
  previous_secret_expires_at?: string | null;
}

export class WebhookListResponseDto extends PageEnvelopeDto {
  @ApiProperty({ type: [WebhookResponseDto] })
  webhooks!: WebhookResponseDto[];
}

export class RotateWebhookSecretDto {
  @ApiPropertyOptional({
    minimum: 0,
    maximum: 720,
    description:
      'How long the replaced secret keeps signing beside the new one; WEBHOOK_SECRET_GRACE_HOURS (24) by ' +
      'default. 0 stops it at once: for a secret that leaked.',
    example: 0,
  })
  @ValidateIf((_, value) => value !== undefined)
  @Max(720, { message: 'must be at most 720' })
  @Min(0, { message: 'must be at least 0' })
  @IsInt({ message: 'must be an integer' })
  grace_hours?: number;
}

export class TestWebhookDto {
  @ApiProperty({ example: 'wh_3kT9qLm2Vx8ZpR4sNc7bYw' })
  @IsString({ message: 'must be a string' })
  @IsDefined({ message: 'is required' })
  webhook_id!: string;

  @ApiProperty({ enum: [...WEBHOOK_EVENTS], enumName: 'WebhookEvent', example: 'document.processed' })
  @IsIn(WEBHOOK_EVENTS, { message: `must be one of ${WEBHOOK_EVENTS.join(', ')}` })
  @IsDefined({ message: 'is required' })
  event!: string;
}

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;

export class ListDeliveriesQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ enum: DELIVERY_STATUSES })
  @ValidateIf((_, value) => value !== undefined)
  @IsIn(DELIVERY_STATUSES, { message: `must be one of ${DELIVERY_STATUSES.join(', ')}` })
  status?: (typeof DELIVERY_STATUSES)[number];
}

export class DeliveryAttemptDto {
  @ApiProperty({ example: 'att_8Jk2mQ4rT7vX1zB5nC9dFg', description: 'Sent as X-SERVICE-Delivery' })
  attempt_id!: string;

  @ApiProperty({ type: 'integer', example: 1 })
  attempt!: number;

  @ApiProperty({ enum: ['delivered', 'failed'] })
  outcome!: string;

  @ApiProperty({ type: 'integer', nullable: true, example: 503, description: 'null: no answer came' })
  status_code!: number | null;

  @ApiProperty({ type: 'integer', example: 84 })
  duration_ms!: number;

  @ApiProperty({ type: String, nullable: true, example: 'the receiver answered 503' })
  error!: string | null;

  @ApiProperty({ type: String, nullable: true, description: 'The first 1 KB of the answer' })
  response_body!: string | null;

  @ApiProperty({ format: 'date-time' })
  started_at!: string;
}

export class DeliveryResponseDto {
  @ApiProperty({ example: 'dlv_2Hq8nR5tW1yZ4bC7eF0gJk' })
  delivery_id!: string;

  @ApiProperty({
    example: 'evt_5Tn1pQ8sV3xA6cE9hK2mLo',
    description: 'The payload `id` and webhook-id: the same on every attempt',
  })
  event_id!: string;

  @ApiProperty({ isArray: false, enum: [...WEBHOOK_EVENTS], enumName: 'WebhookEvent' })
  event!: string;

  @ApiProperty({ enum: DELIVERY_STATUSES, description: 'pending: queued or waiting for a retry' })
  status!: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'When a pending delivery is tried next' })
  next_attempt_at?: string;

  @ApiProperty({ format: 'date-time' })
  created_at!: string;

  @ApiProperty({ format: 'date-time', nullable: true, type: String })
  completed_at!: string | null;

  @ApiProperty({ type: [DeliveryAttemptDto] })
  attempts!: DeliveryAttemptDto[];
}

export class DeliveryListResponseDto extends PageEnvelopeDto {
  @ApiProperty({ type: [DeliveryResponseDto] })
  deliveries!: DeliveryResponseDto[];
}

export class TestDeliveryResponseDto {
  @ApiProperty({ example: 'wh_3kT9qLm2Vx8ZpR4sNc7bYw' })
  webhook_id!: string;

  @ApiProperty({ enum: [...WEBHOOK_EVENTS], enumName: 'WebhookEvent' })
  event!: string;

  @ApiProperty({ description: 'Whether the receiver answered 2xx' })
  delivered!: boolean;

  @ApiProperty({ type: 'integer', nullable: true, example: 200 })
  status_code!: number | null;

  @ApiProperty({ type: 'integer', example: 42 })
  duration_ms!: number;

  @ApiProperty({ type: String, nullable: true })
  error!: string | null;

  @ApiProperty({ type: String, nullable: true, description: 'The first 1 KB of the answer' })
  response_body!: string | null;
}

/** The body of every delivery, for the OpenAPI document (receivers' reference; docs/webhooks.md). */
export class WebhookEventPayloadDto {
  @ApiProperty({
    example: 'evt_5Tn1pQ8sV3xA6cE9hK2mLo',
    description: 'The event: the same on every attempt and redelivery, and as webhook-id; de-duplicate by it',
  })
  id!: string;

  @ApiProperty({ enum: [...WEBHOOK_EVENTS], enumName: 'WebhookEvent' })
  event!: string;

  @ApiProperty({ format: 'date-time', description: 'When the change committed' })
  timestamp!: string;

  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description:
      'document.uploaded: document_id, dataset_id, filename, size_bytes, status, metadata. document.processed: ' +
      'document_id, dataset_id, chunks_created, processing_time_ms, status, embedding_model. ' +
      'document.processing_failed: document_id, dataset_id, error {code, message, details}. document.deleted: ' +
      'document_id, dataset_id, deleted_by. document.updated: document_id, dataset_id, changes {metadata, content {filename, size_bytes, status}}, updated_by. ' +
      'dataset.created: dataset_id, name, description, is_public, created_by. ' +
      'dataset.updated: dataset_id, changes, updated_by. dataset.deleted: dataset_id, document_count, deleted_by.',
    example: {
      document_id: 'doc_7Yh2kQ9mWz4Lp0sVt3nB8x',
      dataset_id: 'ds_4Jq0Zt6mYwQ1bR8sVx3nLp',
      chunks_created: 12,
    },
  })
  data!: Record<string, unknown>;
}
