import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity('idempotency_keys')
export class IdempotencyKeyEntity {
  @PrimaryColumn('text', { name: 'account_id' })
  accountId!: string;

  @PrimaryColumn('text')
  key!: string;

  /** Identifies the request that holds the claim; only it may complete or release the record. */
  @Column('uuid', { name: 'claim_token' })
  claimToken!: string;

  @Column('bytea', { name: 'request_hash' })
  requestHash!: Buffer;

  @Column('text')
  state!: 'pending' | 'completed';

  @Column('json', { name: 'response_body', nullable: true })
  responseBody!: unknown;

  /** The status of a stored error answer (`PartlyAppliedError`); null for the route's own success. */
  @Column('smallint', { name: 'response_status', nullable: true })
  responseStatus!: number | null;

  @Column('timestamptz', { name: 'created_at' })
  createdAt!: Date;

  @Column('timestamptz', { name: 'expires_at' })
  expiresAt!: Date;
}
