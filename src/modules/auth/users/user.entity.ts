import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import type { Role } from 'src/modules/auth/users/roles.js';

@Entity('users')
export class UserEntity {
  @PrimaryColumn('text')
  id!: string;

  @Column('text', { name: 'account_id' })
  accountId!: string;

  /** Lower-cased; unique across the service. */
  @Column('text')
  email!: string;

  @Column('text', { name: 'display_name' })
  displayName!: string;

  @Column('text')
  role!: Role;

  @Column('text', { name: 'password_hash', select: false })
  passwordHash!: string;

  @Column('timestamptz', { name: 'disabled_at', nullable: true })
  disabledAt!: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
