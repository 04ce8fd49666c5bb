export declare const TEMPLATE_DATABASE: string;
export declare function adminUrl(): string;
export declare function databaseUrl(name: string): string;
