import './base.css';
import './observe.css';
