// Node's mysql2 as web applications use it: a pool, execute() (server-side prepared
// statements, LIMIT ? OFFSET ?), query() with placeholders escaped client-side, a
// transaction on one pooled connection, typed results. Prints one line per fact; the
// client suite compares them with MariaDB 10.11's (fixtures/mysql2.expected).
const mysql = require('mysql2/promise');

async function main() {
  const [port, user] = process.argv.slice(2);
  const pool = mysql.createPool({ host: '127.0.0.1', port: Number(port), user, connectionLimit: 4, dateStrings: true, supportBigNumbers: true, bigNumberStrings: true });
  await pool.query('DROP DATABASE IF EXISTS nodeapp');
  await pool.query('CREATE DATABASE nodeapp');
  await pool.query('CREATE TABLE nodeapp.posts (id INT AUTO_INCREMENT PRIMARY KEY, title VARCHAR(100) NOT NULL, body TEXT, score DECIMAL(6,2), views BIGINT, created DATETIME, KEY (created))');
  for (let i = 1; i <= 12; i++) {
    const [r] = await pool.execute('INSERT INTO nodeapp.posts (title, body, score, views, created) VALUES (?, ?, ?, ?, ?)',
      [`post ${i}`, i % 3 ? `body ${i}` : null, (i * 1.25).toFixed(2), 9007199254740993n * BigInt(i % 2), `2024-01-${String(i).padStart(2, '0')} 10:00:00`]);
    if (i === 1 || i === 12) console.log('insertId', r.insertId, 'affected', r.affectedRows);
  }
  const [page] = await pool.execute('SELECT id, title, body, score, views, created FROM nodeapp.posts WHERE created >= ? ORDER BY id LIMIT ? OFFSET ?', ['2024-01-03', '4', '2']);
  for (const row of page) console.log('page', JSON.stringify(row));
  // The same statement again (mysql2 keeps it prepared) with other counts.
  for (const [limit, offset] of [[2, 0], [3, 9]]) {
    const [ids] = await pool.execute('SELECT id FROM nodeapp.posts WHERE created >= ? ORDER BY id LIMIT ? OFFSET ?', ['2024-01-03', String(limit), String(offset)]);
    console.log('page of', limit, 'from', offset, ids.map(r => r.id).join(','));
  }
  const [fields] = await pool.query('SELECT title, score FROM nodeapp.posts WHERE id = ?', [3]);
  console.log('query', JSON.stringify(fields));
  const [cnt] = await pool.query('SELECT COUNT(*) AS n, SUM(score) AS total, MAX(created) AS last FROM nodeapp.posts');
  console.log('aggregate', JSON.stringify(cnt));
  const conn = await pool.getConnection();
  await conn.beginTransaction();
  await conn.execute('UPDATE nodeapp.posts SET views = views + 1 WHERE id = ?', [1]);
  await conn.execute('DELETE FROM nodeapp.posts WHERE id > ?', [10]);
  await conn.rollback();
  await conn.beginTransaction();
  const [u] = await conn.execute('UPDATE nodeapp.posts SET title = CONCAT(title, ?) WHERE id IN (?, ?)', [' (edited)', 2, 4]);
  console.log('updated', u.affectedRows, 'changed', u.changedRows);
  await conn.commit();
  conn.release();
  try {
    await pool.execute('INSERT INTO nodeapp.posts (id, title) VALUES (?, ?)', [1, 'dup']);
  } catch (e) {
    console.log('error', e.code, e.errno, e.sqlState);
  }
  const results = await Promise.all([1, 2, 3, 4, 5, 6].map(i => pool.execute('SELECT title FROM nodeapp.posts WHERE id = ?', [i])));
  console.log('parallel', results.map(([rows]) => rows[0].title).join(','));
  const [after] = await pool.query('SELECT COUNT(*) AS n, SUM(views) AS v FROM nodeapp.posts');
  console.log('after', JSON.stringify(after));
  await pool.query('DROP DATABASE nodeapp');
  await pool.end();
}

main().catch(e => { console.error(e); process.exit(1); });
