/**
 * A page of a listing as services and stores see it: which page, how many per page. How a request
 * spells it (`page`, `per_page`) and how an answer describes it are the HTTP layer's
 * (http/pagination.ts).
 */

export interface Page {
  page: number;
  perPage: number;
}

/** The number of rows before `page` (SQL `offset`). */
export function offsetOf(page: Page): number {
  return (page.page - 1) * page.perPage;
}
