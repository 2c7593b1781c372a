// Everyday-use defect 6: `profile show --format csv` and `costmodel eval
// --format csv` wrote names without CSV quoting.
#include <gtest/gtest.h>

#include <sstream>

#include "trainscope/profile/json.h"

namespace trainscope::profile {

TEST(CsvTest, ProfileAndCostModelNamesAreQuoted) {
  ProfileSummary s;
  s.layers.push_back({"a,b", "x\"y", 1, 2, 3, 4});
  std::ostringstream p;
  profile_csv(p, s);
  EXPECT_NE(p.str().find("\n\"a,b\",\"x\"\"y\",1,2,3,4,"), std::string::npos) << p.str();

  CostModelEval e;
  e.rows.push_back({"m,1", 8, 10, 11});
  e.layer_rows.push_back({"m,1", "l\n2", "Conv2d", 8, 5, 6});
  std::ostringstream c;
  costmodel_eval_csv(c, e);
  EXPECT_NE(c.str().find("iteration,\"m,1\",8,,,"), std::string::npos) << c.str();
  EXPECT_NE(c.str().find("layer,\"m,1\",8,l\\n2,Conv2d,"), std::string::npos) << c.str();
}

}  // namespace trainscope::profile
