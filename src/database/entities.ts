import { IdempotencyKeyEntity } from 'src/common/idempotency/idempotency-key.entity.js';
import { AccountEntity } from 'src/modules/auth/account.entity.js';
import { ApiKeyEntity } from 'src/modules/auth/api-key.entity.js';
import { UserEntity } from 'src/modules/auth/users/user.entity.js';
import { DatasetEntity } from 'src/modules/datasets/dataset.entity.js';
import { DocumentEntity, DocumentSourceEntity } from 'src/modules/documents/document.entity.js';
import { WebhookEntity } from 'src/modules/webhooks/webhook.entity.js';

/** Every entity of the service; migrations own the schema, entities only map rows. */
export const ENTITIES = [
  AccountEntity,
  ApiKeyEntity,
  DatasetEntity,
  DocumentEntity,
  DocumentSourceEntity,
  IdempotencyKeyEntity,
  UserEntity,
  WebhookEntity,
];
