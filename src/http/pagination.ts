/** Page-numbered pagination as the API documents it: `page`, `per_page` in; the pagination object out. */
import { Type } from 'typebox';

export const PageQuery = {
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 })),
  per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 50 })),
};

/** The page a request asked for (validation has already filled in the defaults). */
export function pageOf(query: { page?: number; per_page?: number }): Page {
  return { page: query.page ?? 1, perPage: query.per_page ?? 50 };
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

export interface Page {
  page: number;
  perPage: number;
}

export function offsetOf(page: Page): number {
  return (page.page - 1) * page.perPage;
}

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
