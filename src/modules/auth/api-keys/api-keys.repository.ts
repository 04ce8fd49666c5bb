import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, IsNull } from 'typeorm';
import { entityColumns } from 'src/database/entity-columns.js';
import { ApiKeyEntity } from 'src/modules/auth/api-keys/api-key.entity.js';

@Injectable()
export class ApiKeysRepository {
  /** The key's columns, for the lookup every authenticated request makes. */
  private readonly keyColumns: string;

  constructor(@InjectDataSource() private readonly db: DataSource) {
    this.keyColumns = entityColumns(db, ApiKeyEntity, 'k');
  }

  async insertKey(key: Pick<ApiKeyEntity, 'id' | 'accountId' | 'secretHash'>): Promise<ApiKeyEntity> {
    const repository = this.db.getRepository(ApiKeyEntity);
    await repository.insert(key);
    return repository.findOneByOrFail({ id: key.id });
  }

  async findKeyById(id: string): Promise<ApiKeyEntity | null> {
    const [key] = await this.db.query<ApiKeyEntity[]>(
      `SELECT ${this.keyColumns} FROM api_keys k WHERE k.id = $1`,
      [id],
    );
    return key ?? null;
  }

  listKeysForAccount(accountId: string): Promise<ApiKeyEntity[]> {
    return this.db
      .getRepository(ApiKeyEntity)
      .find({ where: { accountId }, order: { createdAt: 'ASC', id: 'ASC' } });
  }

  /** Marks a key revoked; false when there is no such key or it was revoked already. */
  async revokeKey(id: string): Promise<boolean> {
    const result = await this.db
      .getRepository(ApiKeyEntity)
      .update({ id, revokedAt: IsNull() }, { revokedAt: () => 'now()' });
    return (result.affected ?? 0) > 0;
  }

  async touchLastUsed(id: string): Promise<void> {
    await this.db.getRepository(ApiKeyEntity).update({ id }, { lastUsedAt: () => 'now()' });
  }
}
