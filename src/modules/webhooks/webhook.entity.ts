import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity('webhooks')
export class WebhookEntity {
  @PrimaryColumn('text')
  id!: string;

  @Column('text', { name: 'account_id' })
  accountId!: string;

  @Column('text')
  url!: string;

  @Column('text', { array: true })
  events!: string[];

  @Column('text', { nullable: true })
  description!: string | null;

  @Column('boolean')
  active!: boolean;

  /** Why the service turned it off (failing deliveries); null when active, or turned off by its owner. */
  @Column('text', { name: 'disabled_reason', nullable: true })
  disabledReason!: string | null;

  @Column('text')
  secret!: string;

  /** The secret before the last rotation, which keeps signing beside the new one until it expires. */
  @Column('text', { name: 'previous_secret', nullable: true })
  previousSecret!: string | null;

  @Column('timestamptz', { name: 'previous_secret_expires_at', nullable: true })
  previousSecretExpiresAt!: Date | null;

  /** When it was last turned on: its failure rate counts from here (at most 24 hours back). */
  @Column('timestamptz', { name: 'enabled_at' })
  enabledAt!: Date;

  @Column('timestamptz', { name: 'created_at' })
  createdAt!: Date;

  @Column('timestamptz', { name: 'updated_at' })
  updatedAt!: Date;
}
