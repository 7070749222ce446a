//! sqlparser's MySQL dialect with MariaDB's operator grammar where they differ: `XOR`
//! binds less tightly than `AND` and more than `OR` (sqlparser put it above comparison, so
//! `0 AND 0 XOR 1` gave 0 where MariaDB gives 1), and `MOD` is an infix operator like `%`
//! (a syntax error before). A lone literal skips sqlparser's typed-string attempt (only
//! the time it takes differs). Everything else is MySqlDialect's: the parser's
//! `dialect_of!(… is MySqlDialect)` checks still see MySQL.

use std::any::TypeId;

use sqlparser::ast::{BinaryOperator, Expr, Statement};
use sqlparser::dialect::{Dialect, MySqlDialect, Precedence};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

#[derive(Debug, Default)]
pub struct MariaDialect(MySqlDialect);

/// Between OR (5) and AND (10) in sqlparser's scale.
const XOR_PRECEDENCE: u8 = 7;

macro_rules! same_as_mysql {
    ($($name:ident),* $(,)?) => {
        $(fn $name(&self) -> bool {
            self.0.$name()
        })*
    };
}

impl Dialect for MariaDialect {
    fn dialect(&self) -> TypeId {
        TypeId::of::<MySqlDialect>()
    }

    fn is_identifier_start(&self, ch: char) -> bool {
        self.0.is_identifier_start(ch)
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        self.0.is_identifier_part(ch)
    }

    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        self.0.is_delimited_identifier_start(ch)
    }

    fn identifier_quote_style(&self, identifier: &str) -> Option<char> {
        self.0.identifier_quote_style(identifier)
    }

    fn is_table_factor_alias(&self, explicit: bool, kw: &Keyword, parser: &mut Parser) -> bool {
        self.0.is_table_factor_alias(explicit, kw, parser)
    }

    fn parse_statement(&self, parser: &mut Parser) -> Option<Result<Statement, ParserError>> {
        self.0.parse_statement(parser)
    }

    fn get_next_precedence(&self, parser: &Parser) -> Option<Result<u8, ParserError>> {
        match &parser.peek_token_ref().token {
            Token::Word(w) if w.keyword == Keyword::XOR => Some(Ok(XOR_PRECEDENCE)),
            Token::Word(w) if w.keyword == Keyword::MOD && w.quote_style.is_none() => {
                Some(Ok(self.prec_value(Precedence::MulDivModOp)))
            }
            _ => self.0.get_next_precedence(parser),
        }
    }

    /// A lone literal — a quoted string, a number or NULL followed by `,` or `)`, as in
    /// a dump's VALUES lists — is read as one. sqlparser would first try it as a typed
    /// string (`DATE '…'`) and format an error message it then drops: a third of the
    /// time a dump's INSERT took to parse.
    fn parse_prefix(&self, parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
        let lone = matches!(
            parser.peek_nth_token_ref(1).token,
            Token::Comma | Token::RParen
        );
        let literal = match &parser.peek_token_ref().token {
            Token::SingleQuotedString(_) | Token::Number(..) => true,
            Token::Word(w) => w.keyword == Keyword::NULL && w.quote_style.is_none(),
            _ => false,
        };
        if lone && literal {
            return Some(parser.parse_value().map(Expr::Value));
        }
        self.0.parse_prefix(parser)
    }

    fn parse_infix(
        &self,
        parser: &mut Parser,
        expr: &Expr,
        precedence: u8,
    ) -> Option<Result<Expr, ParserError>> {
        if parser.parse_keyword(Keyword::MOD) {
            return Some(
                parser
                    .parse_subexpr(precedence)
                    .map(|right| Expr::BinaryOp {
                        left: Box::new(expr.clone()),
                        op: BinaryOperator::Modulo,
                        right: Box::new(right),
                    }),
            );
        }
        self.0.parse_infix(parser, expr, precedence)
    }

    same_as_mysql!(
        supports_string_literal_backslash_escape,
        supports_string_literal_concatenation,
        ignores_wildcard_escapes,
        supports_numeric_prefix,
        supports_bitwise_shift_operators,
        supports_multiline_comment_hints,
        require_interval_qualifier,
        supports_limit_comma,
        supports_create_table_select,
        supports_insert_set,
        supports_user_host_grantee,
        supports_table_hints,
        requires_single_line_comment_whitespace,
        supports_match_against,
        supports_select_modifiers,
        supports_set_names,
        supports_comma_separated_set_assignments,
        supports_update_order_by,
        supports_data_type_signed_suffix,
        supports_cross_join_constraint,
        supports_double_ampersand_operator,
        supports_binary_kw_as_cast,
        supports_comment_optimizer_hint,
        supports_constraint_keyword_without_name,
        supports_key_column_option,
        supports_group_by_with_modifier,
        supports_left_associative_joins_without_parens,
    );
}
