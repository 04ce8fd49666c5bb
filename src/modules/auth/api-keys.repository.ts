import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, IsNull } from 'typeorm';
import { newId } from 'src/common/ids/ids.js';
import { AccountEntity } from 'src/modules/auth/account.entity.js';
import { ApiKeyEntity } from 'src/modules/auth/api-key.entity.js';

@Injectable()
export class ApiKeysRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The account named `name`, created when it does not exist yet (safe under concurrent calls). */
  async findOrCreateAccount(name: string): Promise<AccountEntity> {
    await this.db
      .createQueryBuilder()
      .insert()
      .into(AccountEntity)
      .values({ id: newId('acc'), name })
      .orIgnore()
      .execute();
    return this.db.getRepository(AccountEntity).findOneByOrFail({ name });
  }

  findAccountByName(name: string): Promise<AccountEntity | null> {
    return this.db.getRepository(AccountEntity).findOneBy({ name });
  }

  async insertKey(key: Pick<ApiKeyEntity, 'id' | 'accountId' | 'secretHash'>): Promise<ApiKeyEntity> {
    const repository = this.db.getRepository(ApiKeyEntity);
    await repository.insert(key);
    return repository.findOneByOrFail({ id: key.id });
  }

  findKeyById(id: string): Promise<ApiKeyEntity | null> {
    return this.db.getRepository(ApiKeyEntity).findOneBy({ id });
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
