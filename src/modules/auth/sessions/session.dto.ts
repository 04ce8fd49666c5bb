import { ApiProperty } from '@nestjs/swagger';
import { IsString, MaxLength } from 'class-validator';

export class SignInDto {
  @ApiProperty({ example: 'ada@example.com' })
  @IsString()
  @MaxLength(254)
  email!: string;

  @ApiProperty({ example: 'correct horse battery staple', format: 'password' })
  @IsString()
  @MaxLength(4096)
  password!: string;
}

export class SessionUserDto {
  @ApiProperty({ example: 'usr_4Jq0Zt6mYwQ1bR8sVx3nLp' })
  id!: string;

  @ApiProperty({ example: 'acc_4Jq0Zt6mYwQ1bR8sVx3nLp' })
  account_id!: string;

  @ApiProperty({ example: 'ada@example.com' })
  email!: string;

  @ApiProperty({ example: 'Ada Lovelace' })
  display_name!: string;

  @ApiProperty({ enum: ['admin', 'member', 'viewer'] })
  role!: string;
}

export class SessionResponseDto {
  @ApiProperty({ type: SessionUserDto })
  user!: SessionUserDto;

  @ApiProperty({ description: 'The latest the session can last, however active it is' })
  expires_at!: string;

  @ApiProperty({ description: 'When the session ends unless it is used before' })
  idle_expires_at!: string;
}
