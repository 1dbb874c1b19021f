/**
 * The console's routes: real paths under /console/ (the server answers the page for each), moved
 * between with the History API so the back button, reloads and bookmarks work. A route is a pattern
 * (`/assistants/:id`) and a component taking the captured parameters.
 */
import type { ComponentChildren, FunctionComponent, TargetedMouseEvent } from 'preact';
import { useEffect, useState } from 'preact/hooks';

export const BASE = '/console';

export interface Place {
  /** The path inside the console (`/assistants/7`), without the base. */
  path: string;
  query: URLSearchParams;
}

function here(): Place {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) || '/' : '/';
  return { path, query: new URLSearchParams(location.search) };
}

const listeners = new Set<() => void>();
addEventListener('popstate', () => {
  for (const listener of listeners) listener();
});

/** Goes to a console path (`/calls?q=refund`); `replace` keeps it out of the history. */
export function navigate(to: string, options: { replace?: boolean } = {}): void {
  const url = `${BASE}${to}`;
  if (options.replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  for (const listener of listeners) listener();
  // A new page starts at its top, with focus where a screen reader would begin.
  if (!options.replace) {
    scrollTo(0, 0);
    document.getElementById('main')?.focus({ preventScroll: true });
  }
}

export function usePlace(): Place {
  const [place, setPlace] = useState(here);
  useEffect(() => {
    const update = () => setPlace(here());
    listeners.add(update);
    return () => {
      listeners.delete(update);
    };
  }, []);
  return place;
}

/** An ordinary link (open in a new tab works) that moves inside the console without a reload. */
export function Link(props: {
  href: string;
  children: ComponentChildren;
  class?: string;
  'aria-current'?: 'page' | undefined;
  'aria-label'?: string;
  onClick?: (event: TargetedMouseEvent<HTMLAnchorElement>) => void;
}) {
  const { href, children, onClick: alsoOnClick, ...rest } = props;
  const onClick = (event: TargetedMouseEvent<HTMLAnchorElement>) => {
    alsoOnClick?.(event);
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey)
      return;
    event.preventDefault();
    navigate(href);
  };
  return (
    <a {...rest} href={`${BASE}${href}`} onClick={onClick}>
      {children}
    </a>
  );
}

export type RouteParams = Record<string, string>;
export interface Route {
  pattern: string;
  component: FunctionComponent<{ params: RouteParams; place: Place }>;
}

/** The first route whose pattern matches the path, with its parameters. */
export function match(routes: Route[], path: string): { route: Route; params: RouteParams } | undefined {
  const parts = path.split('/').filter(Boolean);
  for (const route of routes) {
    const pattern = route.pattern.split('/').filter(Boolean);
    if (pattern.length !== parts.length) continue;
    const params: RouteParams = {};
    const fits = pattern.every((segment, i) => {
      const part = decodeURIComponent(parts[i]!);
      if (segment.startsWith(':')) {
        params[segment.slice(1)] = part;
        return true;
      }
      return segment === part;
    });
    if (fits) return { route, params };
  }
  return undefined;
}
