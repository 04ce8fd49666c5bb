import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity('idempotency_keys')
export class IdempotencyKeyEntity {
  @PrimaryColumn('text', { name: 'account_id' })
  accountId!: string;

  @PrimaryColumn('text')
  key!: string;

  @Column('bytea', { name: 'request_hash' })
  requestHash!: Buffer;

  @Column('text')
  state!: 'pending' | 'completed';

  @Column('integer', { name: 'response_status', nullable: true })
  responseStatus!: number | null;

  @Column('jsonb', { name: 'response_body', nullable: true })
  responseBody!: unknown;

  @Column('timestamptz', { name: 'created_at' })
  createdAt!: Date;

  @Column('timestamptz', { name: 'expires_at' })
  expiresAt!: Date;
}
