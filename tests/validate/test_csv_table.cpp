#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "validate/published/csv_table.hpp"
#include "tests/scratch_dir.hpp"

using namespace cuboid::validate;

TEST_CASE("CSV table reads header, fields, CRLF and empty fields", "[validate]") {
    const auto path = cuboid::scratch::file("cuboid_csv_table_test.csv");
    {
        std::ofstream out(path, std::ios::binary);
        out << "name,value,empty\r\na,1.5,\r\nb,2e3,x\r\n";
    }
    const CsvTable t = CsvTable::read(path.string());
    REQUIRE(t.rows() == 2);
    CHECK(t.text(0, "name") == "a");
    CHECK(t.number(1, "value") == 2000.0);
    CHECK(t.empty(0, "empty"));
    CHECK(t.text(1, "empty") == "x");
    CHECK_THROWS_WITH(t.number(0, "missing"), Catch::Contains("no column 'missing'"));
    CHECK_THROWS_WITH(t.number(0, "name"), Catch::Contains("not a number"));
    std::filesystem::remove(path);
}

TEST_CASE("CSV table reads quoted fields with commas and doubled quotes", "[validate]") {
    const auto path = cuboid::scratch::file("cuboid_csv_table_quoted.csv");
    {
        std::ofstream out(path, std::ios::binary);
        out << "id,notes,value\n"
               "a,\"x, y\",1\n"
               "b,\"say \"\"hi\"\", then go\",\n"
               "c,\"\",3\n";
    }
    const CsvTable t = CsvTable::read(path.string());
    REQUIRE(t.rows() == 3);
    CHECK(t.text(0, "notes") == "x, y");
    CHECK(t.number(0, "value") == 1.0);
    CHECK(t.text(1, "notes") == "say \"hi\", then go");
    CHECK(t.empty(1, "value"));
    CHECK(t.empty(2, "notes"));
    CHECK(t.number(2, "value") == 3.0);
    {
        std::ofstream out(path, std::ios::binary);
        out << "id,notes\na,\"open\n";
    }
    CHECK_THROWS_WITH(CsvTable::read(path.string()), Catch::Contains(":2: a quoted field is not closed"));
    std::filesystem::remove(path);
}
