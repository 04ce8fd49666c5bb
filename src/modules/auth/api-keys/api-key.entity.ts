import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

@Entity('api_keys')
export class ApiKeyEntity {
  @PrimaryColumn('text')
  id!: string;

  @Column('text', { name: 'account_id' })
  accountId!: string;

  /** SHA-256 of the key's secret part; the key itself is shown once, at creation. */
  @Column('bytea', { name: 'secret_hash' })
  secretHash!: Buffer;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column('timestamptz', { name: 'last_used_at', nullable: true })
  lastUsedAt!: Date | null;

  @Column('timestamptz', { name: 'revoked_at', nullable: true })
  revokedAt!: Date | null;
}
