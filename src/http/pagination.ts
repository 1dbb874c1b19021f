/**
 * Pagination as the API documents it. Page-numbered: `page`, `per_page` in; the pagination object
 * out. Offset (the assistant, graph, call and phone number listings): `skip`, `limit` in; the total in
 * `X-Total-Count`.
 */
import { Type } from 'typebox';
import type { Page } from '../lib/page.js';

export const PageQuery = {
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 })),
  per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 50 })),
};

/** The page a request asked for (validation has already filled in the defaults). */
export function pageOf(query: { page?: number; per_page?: number }): Page {
  return { page: query.page ?? 1, perPage: query.per_page ?? 50 };
}

/** Offset pagination's query parameters, spread into a route's `querystring`. */
export const SkipLimitQuery = {
  skip: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
};

/** The rows a request asked for (validation has already filled in the defaults). */
export function skipLimitOf(query: { skip?: number; limit?: number }): { skip: number; limit: number } {
  return { skip: query.skip ?? 0, limit: query.limit ?? 100 };
}

export const PaginationOut = Type.Object(
  {
    page: Type.Integer(),
    per_page: Type.Integer(),
    total_items: Type.Integer(),
    total_pages: Type.Integer(),
    has_next: Type.Boolean(),
    has_prev: Type.Boolean(),
  },
  { title: 'Pagination' },
);

export function paginationView(page: Page, totalItems: number) {
  const totalPages = Math.ceil(totalItems / page.perPage);
  return {
    page: page.page,
    per_page: page.perPage,
    total_items: totalItems,
    total_pages: totalPages,
    has_next: page.page < totalPages,
    has_prev: page.page > 1,
  };
}
