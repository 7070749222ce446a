import java.sql.*;
import java.util.*;

/**
 * JDBC as Java tools use it (MariaDB Connector/J, Debian libmariadb-java): DatabaseMetaData
 * browsing as DBeaver, DataGrip and Metabase do it, server-side prepared statements,
 * generated keys, batches, transactions. Prints one line per fact; the client suite
 * compares the output with MariaDB 10.11's (fixtures/jdbc-meta.expected).
 * Usage: java -cp mariadb-java-client.jar JdbcMeta.java PORT USER
 */
public class JdbcMeta {
    static void dump(String title, ResultSet rs, String... cols) throws SQLException {
        System.out.println("## " + title);
        List<String> lines = new ArrayList<>();
        while (rs.next()) {
            StringBuilder b = new StringBuilder();
            for (String c : cols) {
                if (b.length() > 0) b.append(" | ");
                b.append(c).append('=').append(rs.getString(c));
            }
            lines.add(b.toString());
        }
        for (String l : lines) System.out.println(l);
        rs.close();
    }

    public static void main(String[] a) throws Exception {
        String url = "jdbc:mariadb://127.0.0.1:" + a[0] + "/?user=" + a[1] + "&useServerPrepStmts=true";
        try (Connection c = DriverManager.getConnection(url)) {
            Statement s = c.createStatement();
            s.execute("DROP DATABASE IF EXISTS jm");
            s.execute("CREATE DATABASE jm");
            s.execute("USE jm");
            s.execute("CREATE TABLE parent (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, name VARCHAR(40) NOT NULL DEFAULT 'x' COMMENT 'the name', price DECIMAL(8,2), created DATETIME, flag TINYINT(1), KEY by_name (name)) COMMENT 'parents'");
            s.execute("CREATE TABLE child (id BIGINT NOT NULL, parent_id INT, note TEXT, score DOUBLE, PRIMARY KEY (id), UNIQUE KEY uq_note (parent_id, score), CONSTRAINT fk_parent FOREIGN KEY (parent_id) REFERENCES parent (id) ON DELETE CASCADE)");
            s.execute("CREATE VIEW v AS SELECT id, name FROM parent");
            DatabaseMetaData md = c.getMetaData();
            System.out.println("product=" + md.getDatabaseProductName());
            System.out.println("catalogTerm=" + md.getCatalogTerm() + " schemaTerm=" + md.getSchemaTerm());
            System.out.println("identifierQuote=" + md.getIdentifierQuoteString());
            System.out.println("currentCatalog=" + c.getCatalog());
            ResultSet cats = md.getCatalogs();
            List<String> cl = new ArrayList<>();
            while (cats.next()) cl.add(cats.getString("TABLE_CAT"));
            System.out.println("catalogs contain jm=" + cl.contains("jm") + " information_schema=" + cl.contains("information_schema"));
            dump("tables", md.getTables("jm", null, "%", null), "TABLE_CAT", "TABLE_SCHEM", "TABLE_NAME", "TABLE_TYPE", "REMARKS");
            dump("tables TABLE only", md.getTables("jm", null, "%", new String[]{"TABLE"}), "TABLE_NAME", "TABLE_TYPE");
            dump("tables VIEW only", md.getTables("jm", null, "%", new String[]{"VIEW"}), "TABLE_NAME", "TABLE_TYPE");
            dump("table types", md.getTableTypes(), "TABLE_TYPE");
            dump("columns parent", md.getColumns("jm", null, "parent", "%"), "TABLE_NAME", "COLUMN_NAME", "DATA_TYPE", "TYPE_NAME", "COLUMN_SIZE", "DECIMAL_DIGITS", "NUM_PREC_RADIX", "NULLABLE", "REMARKS", "COLUMN_DEF", "CHAR_OCTET_LENGTH", "ORDINAL_POSITION", "IS_NULLABLE", "IS_AUTOINCREMENT", "IS_GENERATEDCOLUMN");
            dump("columns child", md.getColumns("jm", null, "child", "%"), "COLUMN_NAME", "DATA_TYPE", "TYPE_NAME", "COLUMN_SIZE", "DECIMAL_DIGITS", "NULLABLE", "COLUMN_DEF", "IS_NULLABLE", "IS_AUTOINCREMENT");
            dump("columns view", md.getColumns("jm", null, "v", "%"), "COLUMN_NAME", "TYPE_NAME", "COLUMN_SIZE", "IS_NULLABLE");
            dump("primary keys child", md.getPrimaryKeys("jm", null, "child"), "TABLE_NAME", "COLUMN_NAME", "KEY_SEQ", "PK_NAME");
            dump("primary keys parent", md.getPrimaryKeys("jm", null, "parent"), "TABLE_NAME", "COLUMN_NAME", "KEY_SEQ", "PK_NAME");
            dump("index info child", md.getIndexInfo("jm", null, "child", false, false), "TABLE_NAME", "NON_UNIQUE", "INDEX_NAME", "TYPE", "ORDINAL_POSITION", "COLUMN_NAME", "ASC_OR_DESC");
            dump("index info parent unique", md.getIndexInfo("jm", null, "parent", true, false), "NON_UNIQUE", "INDEX_NAME", "ORDINAL_POSITION", "COLUMN_NAME");
            dump("imported keys child", md.getImportedKeys("jm", null, "child"), "PKTABLE_CAT", "PKTABLE_NAME", "PKCOLUMN_NAME", "FKTABLE_CAT", "FKTABLE_NAME", "FKCOLUMN_NAME", "KEY_SEQ", "UPDATE_RULE", "DELETE_RULE", "FK_NAME", "PK_NAME", "DEFERRABILITY");
            dump("exported keys parent", md.getExportedKeys("jm", null, "parent"), "PKTABLE_NAME", "PKCOLUMN_NAME", "FKTABLE_NAME", "FKCOLUMN_NAME", "KEY_SEQ", "DELETE_RULE", "FK_NAME");
            dump("cross reference", md.getCrossReference("jm", null, "parent", "jm", null, "child"), "PKTABLE_NAME", "FKTABLE_NAME", "FKCOLUMN_NAME", "FK_NAME");
            dump("best row identifier", md.getBestRowIdentifier("jm", null, "parent", DatabaseMetaData.bestRowSession, true), "SCOPE", "COLUMN_NAME", "DATA_TYPE", "TYPE_NAME", "PSEUDO_COLUMN");
            dump("procedures", md.getProcedures("jm", null, "%"), "PROCEDURE_NAME");
            dump("functions", md.getFunctions("jm", null, "%"), "FUNCTION_NAME");
            ResultSet ti = md.getTypeInfo();
            int n = 0; boolean hasInt = false;
            while (ti.next()) { n++; if ("INT".equalsIgnoreCase(ti.getString("TYPE_NAME"))) hasInt = true; }
            System.out.println("type info rows>20=" + (n > 20) + " INT=" + hasInt);

            // server-side prepared statements, as an application does
            try (PreparedStatement p = c.prepareStatement("INSERT INTO parent (name, price, created, flag) VALUES (?, ?, ?, ?)", Statement.RETURN_GENERATED_KEYS)) {
                for (int i = 1; i <= 5; i++) {
                    p.setString(1, "name" + i);
                    p.setBigDecimal(2, new java.math.BigDecimal(i + ".25"));
                    p.setTimestamp(3, Timestamp.valueOf("2024-0" + i + "-02 03:04:05"));
                    p.setBoolean(4, i % 2 == 0);
                    p.executeUpdate();
                    ResultSet g = p.getGeneratedKeys(); g.next();
                    System.out.println("generated " + g.getLong(1));
                }
            }
            try (PreparedStatement p = c.prepareStatement("INSERT INTO child VALUES (?, ?, ?, ?)")) {
                for (int i = 1; i <= 4; i++) {
                    p.setLong(1, i * 10L); p.setInt(2, (i % 2) + 1); p.setString(3, "note " + i);
                    if (i == 3) p.setNull(4, Types.DOUBLE); else p.setDouble(4, i * 1.5);
                    p.addBatch();
                }
                int[] r = p.executeBatch();
                System.out.println("batch " + Arrays.toString(r));
            }
            try (PreparedStatement p = c.prepareStatement("SELECT p.id, p.name, p.price, p.created, p.flag, c.score FROM parent p LEFT JOIN child c ON c.parent_id = p.id WHERE p.id >= ? ORDER BY p.id, c.id LIMIT ?")) {
                p.setInt(1, 2); p.setInt(2, 4);
                ResultSet rs = p.executeQuery();
                ResultSetMetaData m = rs.getMetaData();
                for (int i = 1; i <= m.getColumnCount(); i++)
                    System.out.println("col " + m.getColumnLabel(i) + " " + m.getColumnTypeName(i) + " type=" + m.getColumnType(i) + " prec=" + m.getPrecision(i) + " scale=" + m.getScale(i) + " nullable=" + m.isNullable(i) + " table=" + m.getTableName(i) + " class=" + m.getColumnClassName(i));
                while (rs.next())
                    System.out.println("row " + rs.getInt(1) + " " + rs.getString(2) + " " + rs.getBigDecimal(3) + " " + rs.getTimestamp(4) + " " + rs.getBoolean(5) + " " + rs.getObject(6));
            }
            c.setAutoCommit(false);
            s.executeUpdate("DELETE FROM parent WHERE id = 2");
            c.rollback();
            c.setAutoCommit(true);
            ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM child");
            rs.next();
            System.out.println("children after rollback " + rs.getInt(1));
            s.executeUpdate("DELETE FROM parent WHERE id = 2");
            rs = s.executeQuery("SELECT COUNT(*) FROM child");
            rs.next();
            System.out.println("children after cascade " + rs.getInt(1));
            s.execute("DROP DATABASE jm");
        }
    }
}
