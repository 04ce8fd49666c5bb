import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { AuthMethod, ClientMetadata } from 'src/modules/auth/oauth/clients/client-metadata.js';

export interface OAuthClient {
  id: string;
  secretHash: Buffer | null;
  authMethod: AuthMethod;
  name: string | null;
  redirectUris: string[];
  metadata: ClientMetadata;
  createdAt: Date;
}

const COLUMNS = `c.id, c.secret_hash AS "secretHash", c.token_endpoint_auth_method AS "authMethod",
  c.client_name AS name, c.redirect_uris AS "redirectUris", c.metadata, c.created_at AS "createdAt"`;

@Injectable()
export class ClientsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async insert(client: Omit<OAuthClient, 'createdAt'>): Promise<OAuthClient> {
    const [row] = await this.db.query<OAuthClient[]>(
      `INSERT INTO oauth_clients AS c (id, secret_hash, token_endpoint_auth_method, client_name, redirect_uris, metadata)
       VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${COLUMNS}`,
      [client.id, client.secretHash, client.authMethod, client.name, client.redirectUris, client.metadata],
    );
    return row;
  }

  /** The client, unless it was deleted. */
  async find(id: string): Promise<OAuthClient | null> {
    const [row] = await this.db.query<OAuthClient[]>(
      `SELECT ${COLUMNS} FROM oauth_clients c WHERE c.id = $1 AND c.deleted_at IS NULL`,
      [id],
    );
    return row ?? null;
  }

  list(): Promise<OAuthClient[]> {
    return this.db.query<OAuthClient[]>(
      `SELECT ${COLUMNS} FROM oauth_clients c WHERE c.deleted_at IS NULL ORDER BY c.created_at, c.id`,
    );
  }

  /** Marks the client deleted; its grants stop working with it (token checks read the client). */
  async delete(id: string): Promise<boolean> {
    // An UPDATE answers [rows, affected] through TypeORM.
    const [, affected] = await this.db.query<[unknown, number]>(
      `UPDATE oauth_clients SET deleted_at = now() WHERE id = $1 AND deleted_at IS NULL`,
      [id],
    );
    return affected > 0;
  }
}
