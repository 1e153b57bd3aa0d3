import './base.css';
import './observe.css';
import './remote.css';
