/** The console's entry: its styles, and the app mounted into the page the server sends. */
import './styles.css';
import { render } from 'preact';
import { App } from './app.js';

render(<App />, document.getElementById('app')!);
