/**
 * A page's frame: its title (also the document's, for tabs and screen readers), actions beside it,
 * and what it shows while loading or after a failure.
 */
import type { ComponentChildren } from 'preact';
import { useEffect } from 'preact/hooks';
import type { Loaded } from '../lib/load.js';

export function Page(props: { title: string; actions?: ComponentChildren; children: ComponentChildren }) {
  useEffect(() => {
    document.title = `${props.title} · Switchboard`;
  }, [props.title]);
  return (
    <section class="page">
      <header class="page-header">
        <h1>{props.title}</h1>
        {props.actions ? <div class="actions">{props.actions}</div> : null}
      </header>
      {props.children}
    </section>
  );
}

/** Renders `children(data)` once loaded; a spinner line before, the failure instead. */
export function Loading<T>(props: { loaded: Loaded<T>; children: (data: T) => ComponentChildren }) {
  const { data, error, loading } = props.loaded;
  if (error)
    return (
      <div class="form-error" role="alert">
        {error.message}
      </div>
    );
  if (data === undefined || (loading && data === undefined))
    return (
      <p class="muted" aria-live="polite">
        Loading…
      </p>
    );
  return <>{props.children(data)}</>;
}

/** A titled block inside a page. */
export function Panel(props: { title?: string; children: ComponentChildren; id?: string }) {
  return (
    <section class="panel" id={props.id} aria-label={props.title}>
      {props.title ? <h2>{props.title}</h2> : null}
      {props.children}
    </section>
  );
}

/** An empty list says so, with what to do next. */
export function Empty(props: { children: ComponentChildren }) {
  return <p class="empty">{props.children}</p>;
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
export function when(iso: string | null | undefined): string {
  return iso ? dateTime.format(new Date(iso)) : '—';
}
