//! `junit.xml`: one test suite per arm, one test case per expectation, so
//! CI systems show a failed bound like a failed test (quick-junit writes
//! the XML).

use super::error::ReportError;
use crate::store::summary::Summary;
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

pub(crate) fn render(s: &Summary) -> Result<String, ReportError> {
    let mut report = Report::new(format!("rlbench {}", s.scenario));
    for arm in &s.arms {
        let mut suite = TestSuite::new(format!("{}/{}", s.scenario, arm.name));
        for e in &arm.expect {
            let status = if e.passed {
                TestCaseStatus::success()
            } else {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                status
                    .set_message(e.detail.clone())
                    .set_type("expectation")
                    .set_description(format!(
                        "arm {}: {} = {} violates {} {} ({})",
                        arm.name,
                        e.figure,
                        e.value.map_or("unbounded".to_string(), |v| v.to_string()),
                        e.kind,
                        e.bound,
                        arm.policy_text
                    ));
                status
            };
            let mut case = TestCase::new(e.expectation.clone(), status);
            case.set_classname(format!("{}.{}", s.scenario, arm.name));
            suite.add_test_case(case);
        }
        report.add_test_suite(suite);
    }
    if s.partial {
        let mut suite = TestSuite::new(format!("{}/run", s.scenario));
        let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
        status.set_message(
            "the run did not complete (interrupted or cut short); figures cover what was sent",
        );
        suite.add_test_case(TestCase::new("run completed", status));
        report.add_test_suite(suite);
    }
    report.to_string().map_err(ReportError::Junit)
}
